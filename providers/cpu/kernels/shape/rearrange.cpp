// rearrange.cpp: DepthToSpace, SpaceToDepth and ReverseSequence: pure data
// movement, any fixed-size element type.
#include <cinttypes>
#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// DepthToSpace [N, C, H, W] -> [N, C / b^2, H * b, W * b] (DCR or CRD order)
// and its inverse SpaceToDepth (DCR order).
class DepthSpaceKernel final : public sdk::Kernel {
 public:
  DepthSpaceKernel(const sdk::NodeInfo& node, bool to_space)
      : label_(util::node_label(node)),
        to_space_(to_space),
        block_(node.get_int("blocksize", 0)),
        crd_(node.get_string("mode", "DCR") == "CRD") {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    const int64_t b = block_;
    if (x.rank() != 4 || b <= 0) return util::fail(label_, "needs a 4-D input and blocksize > 0");
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (to_space_ ? c % (b * b) : (h % b || w % b))
      return util::fail(label_, "input %s does not divide by blocksize %" PRId64, util::dims_str(x.dims).c_str(), b);
    std::vector<int64_t> dims = to_space_ ? std::vector<int64_t>{n, c / (b * b), h * b, w * b}
                                          : std::vector<int64_t>{n, c * b * b, h / b, w / b};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    const size_t es = sdk::dtype_size(x.dtype);
    const auto* in = static_cast<const unsigned char*>(x.raw);
    auto* out = static_cast<unsigned char*>(y.raw);
    // Walk the space-side tensor [N, C', H', W'] (C' = depth / b^2) and map
    // each element to its depth-side index.
    const int64_t cs = to_space_ ? dims[1] : c, hs = to_space_ ? dims[2] : h, ws = to_space_ ? dims[3] : w;
    const int64_t cd = cs * b * b, hd = hs / b, wd = ws / b;
    for (int64_t in_n = 0; in_n < n; ++in_n)
      for (int64_t ch = 0; ch < cs; ++ch)
        for (int64_t y0 = 0; y0 < hs; ++y0)
          for (int64_t x0 = 0; x0 < ws; ++x0) {
            int64_t by = y0 % b, bx = x0 % b;
            int64_t depth_c = crd_ ? (ch * b + by) * b + bx : (by * b + bx) * cs + ch;
            int64_t space = ((in_n * cs + ch) * hs + y0) * ws + x0;
            int64_t depth = ((in_n * cd + depth_c) * hd + y0 / b) * wd + x0 / b;
            if (to_space_) std::memcpy(out + size_t(space) * es, in + size_t(depth) * es, es);
            else std::memcpy(out + size_t(depth) * es, in + size_t(space) * es, es);
          }
    return nullptr;
  }

 private:
  std::string label_;
  bool to_space_;
  int64_t block_;
  bool crd_;
};

// ReverseSequence: reverses the first sequence_lens[b] elements along
// time_axis for each b along batch_axis.
class ReverseSequenceKernel final : public sdk::Kernel {
 public:
  explicit ReverseSequenceKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        batch_axis_(node.get_int("batch_axis", 1)),
        time_axis_(node.get_int("time_axis", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> lens;
    if (!util::read_ints(ctx.in(1), &lens)) return util::fail(label_, "sequence_lens must be int64");
    if (x.rank() < 2 || (batch_axis_ != 0 && batch_axis_ != 1) || time_axis_ != 1 - batch_axis_)
      return util::fail(label_, "needs rank >= 2 with batch_axis and time_axis 0 and 1");
    const int64_t batch = x.dim(size_t(batch_axis_)), steps = x.dim(size_t(time_axis_));
    if (int64_t(lens.size()) != batch) return util::fail(label_, "sequence_lens has %zu values for batch %" PRId64, lens.size(), batch);
    const size_t es = sdk::dtype_size(x.dtype);
    size_t row = es;
    for (size_t d = 2; d < x.rank(); ++d) row *= size_t(x.dim(d));
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t b = 0; b < batch; ++b) {
      int64_t len = lens[size_t(b)];
      if (len < 0 || len > steps) return util::fail(label_, "sequence_lens[%" PRId64 "] = %" PRId64 " is outside [0, %" PRId64 "]", b, len, steps);
      for (int64_t t = 0; t < steps; ++t) {
        int64_t src = t < len ? len - 1 - t : t;
        auto at = [&](int64_t step) { return size_t(time_axis_ == 0 ? step * batch + b : b * steps + step) * row; };
        std::memmove(static_cast<unsigned char*>(y.raw) + at(t), static_cast<const unsigned char*>(x.raw) + at(src), row);
      }
    }
    return nullptr;
  }

 private:
  std::string label_;
  int64_t batch_axis_, time_axis_;
};

std::string check_element_size(const sdk::NodeInfo& n) {
  if (!sdk::dtype_size(n.input_dtype(0)))
    return n.op_type + " of " + sdk::dtype_name(n.input_dtype(0)) + " is not implemented";
  return {};
}

}  // namespace

void register_rearrange_kernels(sdk::KernelRegistry& registry) {
  for (bool to_space : {true, false})
    registry.add(sdk::KernelDefBuilder(to_space ? "DepthToSpace" : "SpaceToDepth")
                     .inputs(1)
                     .check(check_element_size)
                     .create([to_space](const sdk::NodeInfo& n) { return std::make_unique<DepthSpaceKernel>(n, to_space); }));
  registry.add(sdk::KernelDefBuilder("ReverseSequence")
                   .since(10)
                   .inputs(2)
                   .check(check_element_size)
                   .create<ReverseSequenceKernel>());
}

}  // namespace onyx::cpu
