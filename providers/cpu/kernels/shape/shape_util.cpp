// shape_util.cpp: the helpers of shape_util.h.
#include "kernels/shape/shape_util.h"

namespace onyx::cpu::shape {

std::string require_sized(const sdk::NodeInfo& node, std::initializer_list<size_t> inputs) {
  for (size_t k : inputs) {
    if (!node.input_present(k)) continue;
    int32_t dtype = node.inputs[k].dtype;
    size_t size = sdk::dtype_size(dtype);
    if (size == 0 || size > 16 || (size & (size - 1)))
      return node.op_type + ": input " + std::to_string(k) + " has type " + sdk::dtype_name(dtype) +
             ", which is not supported (no fixed element size)";
  }
  return {};
}

bool read_int_input(sdk::ComputeContext& ctx, size_t index, std::vector<int64_t>* out,
                    bool* present, std::string* why) {
  out->clear();
  auto t = ctx.input(index);
  *present = t.has_value();
  if (!t) return true;
  if (util::read_ints(*t, out)) return true;
  *why = "input " + std::to_string(index) + " has type " + sdk::dtype_name(t->dtype) +
         "; expected int64";
  return false;
}

OnyxStatus* output_alias(sdk::ComputeContext& ctx, size_t k, const sdk::Tensor& x,
                         std::span<const int64_t> dims) {
  sdk::Tensor y;
  ONYX_SDK_RETURN_IF_ERROR(ctx.output(k, x.dtype, dims, &y));
  if (y.raw != x.raw && byte_size(x)) std::memmove(y.raw, x.raw, byte_size(x));
  return nullptr;
}

}  // namespace onyx::cpu::shape
