// non_zero.cpp: NonZero (opset 9): the indices of the non-zero elements.
#include <algorithm>

#include "kernels/registry.h"
#include "kernels/shape/shape_util.h"

namespace onyx::cpu {
namespace {

// NonZero: int64 [rank, count] of the indices of the non-zero elements in
// row-major order (a scalar counts as rank 1, like numpy).
class NonZeroKernel final : public sdk::Kernel {
 public:
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> hits;
    size_t esize = sdk::dtype_size(x.dtype);
    const unsigned char* p = static_cast<const unsigned char*>(x.raw);
    for (int64_t i = 0; i < x.size(); ++i) {
      const unsigned char* e = p + size_t(i) * esize;
      bool nonzero = false;
      if (util::is_half(x.dtype)) {
        uint16_t bits;
        std::memcpy(&bits, e, 2);
        nonzero = (bits & 0x7FFF) != 0;  // -0 is zero
      } else if (x.dtype == ONYX_DTYPE_FLOAT32 || x.dtype == ONYX_DTYPE_FLOAT64) {
        double v = 0;
        util::read_scalar(x.dtype, e, &v);
        nonzero = v != 0;  // NaN is non-zero
      } else {
        for (size_t b = 0; b < esize; ++b) nonzero |= e[b] != 0;
      }
      if (nonzero) hits.push_back(i);
    }
    size_t rank = std::max<size_t>(x.rank(), 1);
    int64_t dims[2] = {int64_t(rank), int64_t(hits.size())};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_INT64, dims, &y));
    for (size_t h = 0; h < hits.size(); ++h) {
      int64_t rest = hits[h];
      for (size_t d = x.rank(); d-- > 0;) {
        y.data<int64_t>()[d * hits.size() + h] = rest % x.dim(d);
        rest /= x.dim(d);
      }
      if (x.rank() == 0) y.data<int64_t>()[h] = 0;
    }
    return nullptr;
  }
};

}  // namespace

void register_non_zero_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("NonZero")
                   .since(9)
                   .inputs(1)
                   .input_type(0, sdk::dtypes::kNumeric | sdk::dtypes::kHalf | sdk::dtypes::kBool)
                   .create([](const sdk::NodeInfo&) { return std::make_unique<NonZeroKernel>(); }));
}

}  // namespace onyx::cpu
