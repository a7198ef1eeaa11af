// transformer_block.h: a transformer encoder block as an ONNX model, for the
// providers' tests and the benchmarks (bench/provider_bench.cpp,
// bench/device_io_bench.cpp).
//
//   x [batch, seq, dim]
//   a = LayerNorm(x); q, k, v = a Wq + bq, a Wk + bk, a Wv + bv
//   h = x + Softmax(q k^T / sqrt(dim)) v Wo + bo          (one attention head)
//   y = h + Gelu(LayerNorm(h) W1 + b1) W2 + b2            (MLP of width 4*dim)
//
// Ops: MatMul, Add, Softmax, LayerNormalization, Gelu (opset 20), Transpose,
// Mul. Weights are deterministic (test_models::Rng); input "x", output "y".
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>

namespace onyx::test_models {

onnx::ModelProto build_transformer_block(int64_t seq, int64_t dim, uint64_t seed = 20240611);

}  // namespace onyx::test_models
