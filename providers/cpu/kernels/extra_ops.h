// extra_ops.h: kernel families added for ONNX operator coverage; each file
// defines one register_* function, and register_extra_kernels (nn.cpp)
// calls them all.
#pragma once

#include <onyx/plugin_sdk.hpp>

#include "kernels/kernel_util.h"

namespace onyx::cpu {

void register_loss_kernels(sdk::KernelRegistry& registry);       // NegativeLogLikelihoodLoss SoftmaxCrossEntropyLoss
void register_attention_kernels(sdk::KernelRegistry& registry);  // Attention
void register_misc_ops_kernels(sdk::KernelRegistry& registry);   // RMSNormalization LpNormalization Shrink Swish BitCast Compress
void register_rearrange_kernels(sdk::KernelRegistry& registry);  // DepthToSpace SpaceToDepth ReverseSequence Det
void register_resize_kernels(sdk::KernelRegistry& registry);     // Resize Upsample
void register_quantize_kernels(sdk::KernelRegistry& registry);   // QuantizeLinear DequantizeLinear DynamicQuantizeLinear
void register_preview_training_kernels(sdk::KernelRegistry& registry);  // ai.onnx.preview.training Adagrad Momentum Adam
void register_grid_sample_kernels(sdk::KernelRegistry& registry);  // GridSample
void register_spectral_kernels(sdk::KernelRegistry& registry);   // DFT STFT HannWindow HammingWindow BlackmanWindow
void register_image_kernels(sdk::KernelRegistry& registry);      // CenterCropPad Col2Im AffineGrid RotaryEmbedding
void register_rnn_kernels(sdk::KernelRegistry& registry);        // RNN GRU LSTM
void register_selection_kernels(sdk::KernelRegistry& registry);  // NonMaxSuppression Unique
void register_einsum_kernels(sdk::KernelRegistry& registry);     // Einsum
void register_window_extra_kernels(sdk::KernelRegistry& registry);  // ConvInteger MaxUnpool
void register_causal_conv_kernels(sdk::KernelRegistry& registry);  // CausalConvWithState
void register_linear_attention_kernels(sdk::KernelRegistry& registry);  // LinearAttention
void register_small_kernels(sdk::KernelRegistry& registry);      // SwiGLU TensorScatter OptionalHasElement OptionalGetElement
void register_flex_attention_kernels(sdk::KernelRegistry& registry);  // ai.onnx.preview FlexAttention
void register_roi_align_kernels(sdk::KernelRegistry& registry);  // RoiAlign
void register_tree_ensemble_kernels(sdk::KernelRegistry& registry);  // ai.onnx.ml TreeEnsemble

inline void register_extra_kernels(sdk::KernelRegistry& registry) {
  register_loss_kernels(registry);
  register_attention_kernels(registry);
  register_misc_ops_kernels(registry);
  register_rearrange_kernels(registry);
  register_resize_kernels(registry);
  register_quantize_kernels(registry);
  register_preview_training_kernels(registry);
  register_grid_sample_kernels(registry);
  register_spectral_kernels(registry);
  register_image_kernels(registry);
  register_rnn_kernels(registry);
  register_selection_kernels(registry);
  register_einsum_kernels(registry);
  register_window_extra_kernels(registry);
  register_causal_conv_kernels(registry);
  register_linear_attention_kernels(registry);
  register_small_kernels(registry);
  register_flex_attention_kernels(registry);
  register_roi_align_kernels(registry);
  register_tree_ensemble_kernels(registry);
}

}  // namespace onyx::cpu
