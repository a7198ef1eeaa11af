// array_feature_extractor.cpp: ai.onnx.ml ArrayFeatureExtractor (opset 1):
// the listed entries of X's last axis.
#include <cinttypes>
#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// ArrayFeatureExtractor: the entries Y of X's last axis ([..., N] -> [..., k];
// a 1-D X gives [1, k]).
class FeatureExtractorKernel final : public sdk::Kernel {
 public:
  explicit FeatureExtractorKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> pick;
    if (!util::read_ints(ctx.in(1), &pick)) return util::fail(label_, "Y must be int64");
    if (x.rank() == 0) return util::fail(label_, "X must have at least one dim");
    const int64_t n = x.dim(x.rank() - 1), rows = n ? x.size() / n : 0, k = int64_t(pick.size());
    for (int64_t p : pick)
      if (p < 0 || p >= n) return util::fail(label_, "index %" PRId64 " is outside X's last dim of %" PRId64, p, n);
    std::vector<int64_t> dims(x.dims.begin(), x.dims.end());
    if (dims.size() == 1) dims.insert(dims.begin(), 1);
    dims.back() = k;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    const size_t es = sdk::dtype_size(x.dtype);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j)
        std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(r * k + j) * es,
                    static_cast<const unsigned char*>(x.raw) + size_t(r * n + pick[size_t(j)]) * es, es);
    return nullptr;
  }

 private:
  std::string label_;
};

}  // namespace

void register_array_feature_extractor_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("ArrayFeatureExtractor", "ai.onnx.ml")
                   .inputs(2)
                   .check([](const sdk::NodeInfo& n) {
                     return sdk::dtype_size(n.input_dtype(0)) ? std::string() : std::string("element type has no fixed size");
                   })
                   .create<FeatureExtractorKernel>());
}

}  // namespace onyx::cpu
