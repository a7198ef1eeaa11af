// spatial.h: window geometry shared by Conv/ConvTranspose, pooling and their
// gradients: ONNX attributes (auto_pad, pads, strides, dilations, ceil_mode)
// turned into oneDNN's dims, strides, dilations and begin/end padding.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dnnl_common.h"

namespace onyx::onednn {

// Dense row-major strides of `d`.
dims_t dense_strides(const dims_t& d);

struct ConvAttrs {
  bool transposed = false;  // ConvTranspose
  std::string auto_pad;
  std::vector<int64_t> strides, dilations, pads, kernel_shape, output_padding, output_shape;
  int64_t group = 1;
};
// Conv's attributes from a Conv, ConvTranspose or ai.onyx ConvGrad node.
ConvAttrs read_conv_attrs(const NodeInfo& n);

// One call's shapes in oneDNN's terms.
struct ConvGeometry {
  dims_t src, weights, dst, strides, dilates, pad_begin, pad_end;
  dims_t user_weight_strides;  // the ONNX weight layout over oneDNN's weight dims
  std::vector<int64_t> onnx_out;
};
// Input `x` and weights `w` -> geometry; false with *err for shapes that do not fit.
bool conv_geometry(const ConvAttrs& a, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                   ConvGeometry* g, std::string* err);
// About 2 * output elements * weights per output channel.
double conv_work(const std::vector<int64_t>& x, const std::vector<int64_t>& w);

// The float32 data of constant input `k` of `n`.
std::vector<float> constant_floats(const NodeInfo& n, size_t k);
// Folds inference BatchNormalization `bn` (constant parameters) into
// convolution weights (ONNX layout, output channel outermost) and bias.
void fold_batch_norm(const NodeInfo& bn, std::vector<float>* weights, std::optional<std::vector<float>>* bias);
// "" when `n` (Conv or ConvTranspose) can run on oneDNN.
std::string conv_supports(const NodeInfo& n);
// "" when the window attributes of `n` (auto_pad, strides, dilations) are
// ones conv_geometry() handles: shared with QLinearConv's check.
std::string conv_attributes_supported(const NodeInfo& n);

struct PoolSpec {
  bool global = false, max = false, ceil_mode = false, count_include_pad = false;
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel, strides, dilations, pads;
};
// From a (Global)MaxPool, (Global)AveragePool or ai.onyx *PoolGrad node.
PoolSpec read_pool_spec(const NodeInfo& n);

struct PoolGeometry {
  dims_t kernel, strides, dilates, pad_begin, pad_end;
  std::vector<int64_t> out;
};
bool pool_geometry(const PoolSpec& s, const std::vector<int64_t>& x, PoolGeometry* g, std::string* err);

}  // namespace onyx::onednn
