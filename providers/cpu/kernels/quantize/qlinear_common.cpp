// qlinear_common.cpp: scale and zero-point checks of the quantized kernels.
#include "kernels/quantize/qlinear_common.h"

#include <cstdio>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"

namespace onyx::cpu::quant {

std::string scale_problem(const sdk::Tensor& scale, const char* what) {
  for (int64_t i = 0; i < scale.size(); ++i) {
    const double s = narrow::load(scale.dtype, scale.raw, i);
    if (std::isfinite(s) && s > 0) continue;
    char buf[160];
    const std::string at = scale.size() == 1 ? std::string() : " element " + std::to_string(i);
    std::snprintf(buf, sizeof buf, "%s%s is %g; a scale must be positive and finite", what, at.c_str(), s);
    return buf;
  }
  return {};
}

std::string read_qparam(const sdk::ComputeContext& ctx, const QParamSpec& spec, int32_t dtype, const char* tensor,
                        QParam* out) {
  const sdk::Tensor scale = ctx.in(spec.scale_index);
  if (scale.size() != 1)
    return std::string(spec.scale_name) + " has shape " + util::dims_str(scale.dims) +
           "; this op takes one scale per tensor";
  if (std::string e = scale_problem(scale, spec.scale_name); !e.empty()) return e;
  out->scale = narrow::load(scale.dtype, scale.raw, 0);
  out->zero = 0;
  const std::optional<sdk::Tensor> zero =
      spec.zero_index == SIZE_MAX ? std::nullopt : ctx.input(spec.zero_index);
  if (!zero) return {};
  if (zero->dtype != dtype)
    return std::string(spec.zero_name) + " has type " + sdk::dtype_name(zero->dtype) + " but " + tensor +
           " has type " + sdk::dtype_name(dtype) + "; a zero point has its tensor's type";
  if (zero->size() != 1)
    return std::string(spec.zero_name) + " has shape " + util::dims_str(zero->dims) +
           "; this op takes one zero point per tensor";
  out->zero = int32_t(narrow::load(zero->dtype, zero->raw, 0));
  return {};
}

std::string missing_input(const sdk::NodeInfo& node, std::initializer_list<size_t> required) {
  for (size_t k : required)
    if (!node.input_present(k))
      return node.op_type + ": required input " + std::to_string(k) + " is missing";
  return {};
}

}  // namespace onyx::cpu::quant
