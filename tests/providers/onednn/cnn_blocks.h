// cnn_blocks.h: small CNNs in the forms torch.onnx.export writes for
// torchvision networks, for the oneDNN provider's blocked-layout groups:
// a ResNet stem and basic blocks (Conv+BatchNorm+Relu, MaxPool, residual
// Add, a strided 1x1 shortcut, GlobalAveragePool, Flatten, Gemm) and a
// MobileNetV2 inverted residual (1x1 expand, depthwise 3x3, Relu6 as Clip
// with min/max from Constant nodes or initializers, linear 1x1 projection,
// residual Add). Random weights; batch is the symbolic dim "N".
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>

namespace onyx::onednn_test {

// x [N, 3, 32, 32] -> y [N, 10].
onnx::ModelProto build_residual_cnn(uint64_t seed);
// x [N, 8, 16, 16] -> y [N, 8, 8, 8].
onnx::ModelProto build_inverted_residual(uint64_t seed);

}  // namespace onyx::onednn_test
