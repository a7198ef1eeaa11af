// max_unpool.cpp: MaxUnpool (opsets 9, 11, 22): MaxPool's values scattered
// back to the positions its indices name.
#include <cinttypes>
#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// MaxUnpool: scatters X into zeros at the flat positions I (as MaxPool's
// indices: over the whole output tensor), output shape from output_shape or
// (in - 1) * stride + kernel - pads.
class MaxUnpoolKernel final : public sdk::Kernel {
 public:
  explicit MaxUnpoolKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        kernel_(node.get_ints("kernel_shape")),
        pads_(node.get_ints("pads")),
        strides_(node.get_ints("strides")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), idx = ctx.in(1);
    const size_t spatial = x.rank() >= 3 ? x.rank() - 2 : 0;
    if (spatial == 0 || kernel_.size() != spatial || idx.size() != x.size())
      return util::fail(label_, "X %s, I %s and kernel_shape do not fit", util::dims_str(x.dims).c_str(),
                        util::dims_str(idx.dims).c_str());
    std::vector<int64_t> dims{x.dim(0), x.dim(1)};
    for (size_t d = 0; d < spatial; ++d) {
      int64_t stride = strides_.empty() ? 1 : strides_[d];
      int64_t pads = pads_.empty() ? 0 : pads_[d] + pads_[spatial + d];
      dims.push_back((x.dim(d + 2) - 1) * stride + kernel_[d] - pads);
    }
    // The indices address the default shape; a larger output_shape pads
    // each dim at its end with zeros (as ONNX's reference).
    std::vector<int64_t> out_dims = dims;
    if (auto t = ctx.input(2); t && t->size() > 0) {
      if (!util::read_ints(*t, &out_dims) || out_dims.size() != x.rank())
        return util::fail(label_, "output_shape must list %zu dims", x.rank());
      for (size_t d = 0; d < dims.size(); ++d)
        if (out_dims[d] < dims[d])
          return util::fail(label_, "output_shape %s is smaller than the unpooled shape %s", util::dims_str(out_dims).c_str(),
                            util::dims_str(dims).c_str());
    }
    int64_t total = 1;
    for (int64_t d : dims) total *= d;
    const size_t es = sdk::dtype_size(x.dtype);
    std::vector<unsigned char> full(size_t(total) * es, 0);
    std::vector<int64_t> where;
    if (!util::read_ints(idx, &where)) return util::fail(label_, "I must be int64");
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t at = where[size_t(i)];
      if (at < 0 || at >= total)
        return util::fail(label_, "index %" PRId64 " at position %" PRId64 " is outside the output of %" PRId64 " elements", at, i,
                          total);
      std::memcpy(full.data() + size_t(at) * es, static_cast<const unsigned char*>(x.raw) + size_t(i) * es, es);
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    std::memset(y.raw, 0, size_t(y.size()) * es);
    const int64_t row = dims.back();
    for (int64_t r = 0; r < total / row; ++r) {
      // Row r of the default shape -> its place in the padded output.
      int64_t rest = r, at = 0, stride = out_dims.back();
      for (size_t d = dims.size() - 1; d-- > 0;) {
        at += (rest % dims[d]) * stride;
        rest /= dims[d];
        stride *= out_dims[d];
      }
      std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(at) * es, full.data() + size_t(r * row) * es, size_t(row) * es);
    }
    return nullptr;
  }

 private:
  std::string label_;
  std::vector<int64_t> kernel_, pads_, strides_;
};

}  // namespace

void register_max_unpool_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("MaxUnpool")
                   .since(9)
                   .check([](const sdk::NodeInfo& n) {
                     return sdk::dtype_size(n.input_dtype(0)) ? std::string() : std::string("element type has no fixed size");
                   })
                   .create<MaxUnpoolKernel>());
}

}  // namespace onyx::cpu
