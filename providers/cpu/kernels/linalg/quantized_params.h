// quantized_params.h: the scale and zero-point inputs of the integer matrix
// multiplies (quantized_matmul.cpp, quantized_gemm.cpp): one value per
// tensor, or one per row of A / column of B.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/narrow_types.h"
#include "kernels/nn_util.h"

namespace onyx::cpu::linalg {

struct QuantParam {
  std::vector<double> values;
  double at(int64_t i) const { return values.size() == 1 ? values[0] : values[size_t(i)]; }
  bool scalar() const { return values.size() == 1; }
  std::vector<int32_t> ints() const { return {values.begin(), values.end()}; }
};

// Reads tensor t (absent: `fallback`) holding 1 or `count` values: "" or why not.
inline std::string read_param(const std::optional<sdk::Tensor>& t, int64_t count, const char* what, double fallback,
                              QuantParam* out) {
  if (!t) {
    out->values = {fallback};
    return "";
  }
  if (t->size() != 1 && t->size() != count)
    return std::string(what) + " has shape " + nn::dims_str(t->dims) + "; expected 1 or " + std::to_string(count) +
           " elements";
  out->values.resize(size_t(t->size()));
  for (int64_t i = 0; i < t->size(); ++i) out->values[size_t(i)] = narrow::load(t->dtype, t->raw, i);
  return "";
}

// A constant input seen at kernel creation, as a tensor view.
inline sdk::Tensor constant_view(const sdk::ConstantTensor& t) {
  return {t.dtype, t.dims, const_cast<unsigned char*>(t.bytes.data())};
}

// The constant at input k, if the node has one there.
inline std::optional<sdk::Tensor> constant_input(const sdk::NodeInfo& node, size_t k) {
  if (k >= node.inputs.size() || !node.inputs[k].present || !node.inputs[k].constant) return std::nullopt;
  return constant_view(*node.inputs[k].constant);
}

// True when input k is absent or a constant: what packing at creation needs.
inline bool absent_or_constant(const sdk::NodeInfo& node, size_t k) {
  return k >= node.inputs.size() || !node.inputs[k].present || node.inputs[k].constant.has_value();
}

}  // namespace onyx::cpu::linalg
