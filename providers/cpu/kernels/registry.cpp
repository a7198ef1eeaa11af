// registry.cpp: every kernel the CPU provider registers, one call per kernel
// file, grouped by op family (the folders under kernels/). A node is matched
// against the kernels of its domain and op in this order.
#include "kernels/registry.h"

namespace onyx::cpu {

void register_all_kernels(sdk::KernelRegistry& registry) {
  // elementwise/
  // Sqrt Exp Log Neg Abs Reciprocal Relu LeakyRelu Sigmoid Tanh Erf Gelu Not Floor Ceil Round
  // Sign Elu Selu HardSigmoid HardSwish Softplus Softsign Sin Cos Tan Asin Acos Atan Sinh Cosh
  // Asinh Acosh Atanh IsNaN IsInf BitwiseNot ThresholdedRelu Celu Mish
  ew::register_unary_kernels(registry);
  // Add Sub Mul Div Mod Pow BitShift BitwiseAnd BitwiseOr BitwiseXor And Or Xor Equal Less
  // Greater LessOrEqual GreaterOrEqual PRelu
  ew::register_binary_kernels(registry);
  ew::register_variadic_kernels(registry);  // Sum Mean Min Max Where Clip
  register_shrink_kernels(registry);  // Shrink
  register_swiglu_kernels(registry);        // SwiGLU

  // reduce/
  register_reduction_kernels(registry);   // ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2
                                          // ReduceLogSum ReduceLogSumExp ReduceSumSquare ArgMax ArgMin
  register_cumulative_kernels(registry);  // CumSum CumProd

  // shape/
  register_reshape_kernels(registry);         // Reshape Flatten Squeeze Unsqueeze Identity Dropout Shape Size
  register_layout_kernels(registry);          // Transpose Concat Split Expand Tile
  register_slice_pad_kernels(registry);       // Slice Pad
  register_gather_kernels(registry);          // Gather GatherElements GatherND Scatter ScatterElements ScatterND
  register_tensor_scatter_kernels(registry);  // TensorScatter
  register_rearrange_kernels(registry);       // DepthToSpace SpaceToDepth ReverseSequence
  register_optional_kernels(registry);        // OptionalHasElement OptionalGetElement

  // cast/
  register_cast_kernels(registry);      // Cast CastLike
  register_bit_cast_kernels(registry);  // BitCast

  // generator/
  register_tensor_make_kernels(registry);  // Constant ConstantOfShape Range EyeLike OneHot

  // selection/
  register_top_k_kernels(registry);                // TopK
  register_non_zero_kernels(registry);             // NonZero
  register_unique_kernels(registry);               // Unique
  register_compress_kernels(registry);             // Compress
  register_non_max_suppression_kernels(registry);  // NonMaxSuppression

  // linalg/
  register_matmul_kernels(registry);            // MatMul Gemm
  register_quantized_matmul_kernels(registry);  // MatMulInteger QLinearMatMul
  register_quantized_gemm_kernels(registry);    // com.microsoft QGemm DynamicQuantizeMatMul
  register_einsum_kernels(registry);            // Einsum
  register_det_kernels(registry);               // Det
  register_trilu_kernels(registry);             // Trilu

  // conv/
  register_conv_kernels(registry);            // Conv ConvTranspose
  register_quantized_conv_kernels(registry);  // ConvInteger QLinearConv
  register_deform_conv_kernels(registry);     // DeformConv
  register_causal_conv_kernels(registry);     // CausalConvWithState

  // pool/
  register_pool_kernels(registry);        // MaxPool AveragePool LpPool GlobalMaxPool GlobalAveragePool GlobalLpPool
  register_max_unpool_kernels(registry);  // MaxUnpool
  register_roi_align_kernels(registry);   // RoiAlign

  // norm/
  register_batch_norm_kernels(registry);          // BatchNormalization
  register_row_norm_kernels(registry);            // LayerNormalization InstanceNormalization GroupNormalization
  register_lrn_kernels(registry);                 // LRN
  register_mean_variance_norm_kernels(registry);  // MeanVarianceNormalization
  register_rms_norm_kernels(registry);            // RMSNormalization
  register_lp_norm_kernels(registry);             // LpNormalization
  register_softmax_kernels(registry);             // Softmax LogSoftmax Hardmax

  // attention/
  register_attention_kernels(registry);         // Attention
  register_multi_head_attention_kernels(registry);  // com.microsoft MultiHeadAttention
  register_rotary_embedding_kernels(registry);  // RotaryEmbedding
  register_flex_attention_kernels(registry);    // ai.onnx.preview FlexAttention
  register_linear_attention_kernels(registry);  // LinearAttention

  // rnn/
  register_rnn_kernels(registry);  // RNN GRU LSTM

  // image/
  register_resize_kernels(registry);           // Resize Upsample
  register_grid_sample_kernels(registry);      // GridSample
  register_affine_grid_kernels(registry);      // AffineGrid
  register_center_crop_pad_kernels(registry);  // CenterCropPad
  register_col2im_kernels(registry);           // Col2Im

  // quantize/
  register_quantize_kernels(registry);  // QuantizeLinear DequantizeLinear DynamicQuantizeLinear
  // com.microsoft (ONNX Runtime's contrib ops, written by its quantizer):
  register_qlinear_binary_kernels(registry);  // QLinearAdd QLinearMul
  register_qlinear_unary_kernels(registry);   // QLinearSigmoid QLinearLeakyRelu
  register_qlinear_pool_kernels(registry);    // QLinearAveragePool QLinearGlobalAveragePool
  register_qlinear_concat_kernels(registry);  // QLinearConcat

  // signal/
  register_spectral_kernels(registry);  // DFT STFT HannWindow HammingWindow BlackmanWindow MelWeightMatrix

  // loss/
  register_loss_kernels(registry);  // NegativeLogLikelihoodLoss SoftmaxCrossEntropyLoss

  // ml/
  register_tree_ensemble_kernels(registry);            // ai.onnx.ml TreeEnsemble
  register_binarizer_kernels(registry);                // ai.onnx.ml Binarizer
  register_array_feature_extractor_kernels(registry);  // ai.onnx.ml ArrayFeatureExtractor
  register_tfidf_vectorizer_kernels(registry);         // TfIdfVectorizer

  // grad/: the ai.onyx ops that runtime/autodiff emits
  register_sum_to_shape_kernels(registry);  // SumToShape
  register_loss_grad_kernels(registry);     // NegativeLogLikelihoodLoss NegativeLogLikelihoodLossGrad
  register_gather_grad_kernels(registry);   // GatherGrad SliceGrad
  register_conv_grad_kernels(registry);     // ConvGrad
  register_pool_grad_kernels(registry);     // MaxPoolGrad AveragePoolGrad
  register_batch_norm_grad_kernels(registry);  // BatchNormGradSums

  // optimizer/
  register_preview_training_kernels(registry);  // ai.onnx.preview.training Adagrad Momentum Adam
  register_fused_optimizer_kernels(registry);   // ai.onyx.optimizers AdamW SGD
}

}  // namespace onyx::cpu
