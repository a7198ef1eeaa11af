// registry.h: the CPU provider's kernel families, one register_* function per
// kernel file (the file named after it, in the folder of its op family).
// registry.cpp calls them all, in one list.
#pragma once

#include <onyx/plugin_sdk.hpp>

namespace onyx::cpu {

// The domain of Onyx's own gradient and loss ops (grad/).
inline constexpr const char* kOnyxDomain = "ai.onyx";

// Every kernel below, in the order of registry.cpp.
void register_all_kernels(sdk::KernelRegistry& registry);

namespace ew {  // elementwise/
void register_unary_kernels(sdk::KernelRegistry& registry);
void register_binary_kernels(sdk::KernelRegistry& registry);
void register_variadic_kernels(sdk::KernelRegistry& registry);
}  // namespace ew
void register_shrink_kernels(sdk::KernelRegistry& registry);
void register_swiglu_kernels(sdk::KernelRegistry& registry);
// reduce/
void register_reduction_kernels(sdk::KernelRegistry& registry);
void register_cumulative_kernels(sdk::KernelRegistry& registry);
// shape/
void register_reshape_kernels(sdk::KernelRegistry& registry);
void register_layout_kernels(sdk::KernelRegistry& registry);
void register_slice_pad_kernels(sdk::KernelRegistry& registry);
void register_gather_kernels(sdk::KernelRegistry& registry);
void register_tensor_scatter_kernels(sdk::KernelRegistry& registry);
void register_rearrange_kernels(sdk::KernelRegistry& registry);
void register_optional_kernels(sdk::KernelRegistry& registry);
// cast/
void register_cast_kernels(sdk::KernelRegistry& registry);
void register_bit_cast_kernels(sdk::KernelRegistry& registry);
// generator/
void register_tensor_make_kernels(sdk::KernelRegistry& registry);
// selection/
void register_top_k_kernels(sdk::KernelRegistry& registry);
void register_non_zero_kernels(sdk::KernelRegistry& registry);
void register_unique_kernels(sdk::KernelRegistry& registry);
void register_compress_kernels(sdk::KernelRegistry& registry);
void register_non_max_suppression_kernels(sdk::KernelRegistry& registry);
// linalg/
void register_matmul_kernels(sdk::KernelRegistry& registry);
void register_quantized_matmul_kernels(sdk::KernelRegistry& registry);
void register_quantized_gemm_kernels(sdk::KernelRegistry& registry);
void register_einsum_kernels(sdk::KernelRegistry& registry);
void register_det_kernels(sdk::KernelRegistry& registry);
void register_trilu_kernels(sdk::KernelRegistry& registry);
// conv/
void register_conv_kernels(sdk::KernelRegistry& registry);
void register_quantized_conv_kernels(sdk::KernelRegistry& registry);
void register_deform_conv_kernels(sdk::KernelRegistry& registry);
void register_causal_conv_kernels(sdk::KernelRegistry& registry);
// pool/
void register_pool_kernels(sdk::KernelRegistry& registry);
void register_max_unpool_kernels(sdk::KernelRegistry& registry);
void register_roi_align_kernels(sdk::KernelRegistry& registry);
// norm/
void register_batch_norm_kernels(sdk::KernelRegistry& registry);
void register_row_norm_kernels(sdk::KernelRegistry& registry);
void register_lrn_kernels(sdk::KernelRegistry& registry);
void register_mean_variance_norm_kernels(sdk::KernelRegistry& registry);
void register_rms_norm_kernels(sdk::KernelRegistry& registry);
void register_lp_norm_kernels(sdk::KernelRegistry& registry);
void register_softmax_kernels(sdk::KernelRegistry& registry);
// attention/
void register_attention_kernels(sdk::KernelRegistry& registry);
void register_multi_head_attention_kernels(sdk::KernelRegistry& registry);
void register_rotary_embedding_kernels(sdk::KernelRegistry& registry);
void register_flex_attention_kernels(sdk::KernelRegistry& registry);
void register_linear_attention_kernels(sdk::KernelRegistry& registry);
// rnn/
void register_rnn_kernels(sdk::KernelRegistry& registry);
// image/
void register_resize_kernels(sdk::KernelRegistry& registry);
void register_grid_sample_kernels(sdk::KernelRegistry& registry);
void register_affine_grid_kernels(sdk::KernelRegistry& registry);
void register_center_crop_pad_kernels(sdk::KernelRegistry& registry);
void register_col2im_kernels(sdk::KernelRegistry& registry);
// quantize/
void register_quantize_kernels(sdk::KernelRegistry& registry);
void register_qlinear_binary_kernels(sdk::KernelRegistry& registry);
void register_qlinear_unary_kernels(sdk::KernelRegistry& registry);
void register_qlinear_pool_kernels(sdk::KernelRegistry& registry);
void register_qlinear_concat_kernels(sdk::KernelRegistry& registry);
// signal/
void register_spectral_kernels(sdk::KernelRegistry& registry);
// loss/
void register_loss_kernels(sdk::KernelRegistry& registry);
// ml/
void register_tree_ensemble_kernels(sdk::KernelRegistry& registry);
void register_binarizer_kernels(sdk::KernelRegistry& registry);
void register_array_feature_extractor_kernels(sdk::KernelRegistry& registry);
void register_tfidf_vectorizer_kernels(sdk::KernelRegistry& registry);
// grad/
void register_sum_to_shape_kernels(sdk::KernelRegistry& registry);
void register_loss_grad_kernels(sdk::KernelRegistry& registry);
void register_gather_grad_kernels(sdk::KernelRegistry& registry);
void register_conv_grad_kernels(sdk::KernelRegistry& registry);
void register_pool_grad_kernels(sdk::KernelRegistry& registry);
void register_batch_norm_grad_kernels(sdk::KernelRegistry& registry);
// optimizer/
void register_preview_training_kernels(sdk::KernelRegistry& registry);
void register_fused_optimizer_kernels(sdk::KernelRegistry& registry);

}  // namespace onyx::cpu
