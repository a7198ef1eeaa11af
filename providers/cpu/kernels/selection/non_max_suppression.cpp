// non_max_suppression.cpp: NonMaxSuppression (opsets 10, 11): per batch and
// class, the best-scoring boxes that do not overlap a better one too much.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// NonMaxSuppression: per batch and class, boxes scoring above
// score_threshold in descending score order (ties by index), each kept
// unless its IoU with a kept box exceeds iou_threshold, at most
// max_output_boxes_per_class of them. Output [k, 3]: (batch, class, box).
class NmsKernel final : public sdk::Kernel {
 public:
  explicit NmsKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), center_(node.get_int("center_point_box", 0) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor boxes = ctx.in(0), scores = ctx.in(1);
    if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 || scores.dim(0) != boxes.dim(0) ||
        scores.dim(2) != boxes.dim(1))
      return util::fail(label_, "boxes %s and scores %s do not fit ([B, N, 4] and [B, C, N])",
                        util::dims_str(boxes.dims).c_str(), util::dims_str(scores.dims).c_str());
    int64_t max_out = 0;
    double iou_limit = 0, score_limit = -INFINITY;
    if (auto t = ctx.input(2); t && t->size() > 0) {
      std::vector<int64_t> v;
      if (!util::read_ints(*t, &v)) return util::fail(label_, "max_output_boxes_per_class must be int64");
      max_out = v[0];
    }
    if (auto t = ctx.input(3); t && t->size() > 0) iou_limit = narrow::load(t->dtype, t->raw, 0);
    if (auto t = ctx.input(4); t && t->size() > 0) score_limit = narrow::load(t->dtype, t->raw, 0);
    const int64_t batches = boxes.dim(0), n = boxes.dim(1), classes = scores.dim(1);
    std::vector<int64_t> selected;
    for (int64_t b = 0; b < batches; ++b) {
      // Corners (y1, x1, y2, x2) with y1 <= y2 and x1 <= x2.
      std::vector<std::array<double, 4>> box(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        double v[4];
        for (int k = 0; k < 4; ++k) v[k] = narrow::load(boxes.dtype, boxes.raw, (b * n + i) * 4 + k);
        if (center_) box[size_t(i)] = {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
        else box[size_t(i)] = {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
      }
      for (int64_t c = 0; c < classes; ++c) {
        std::vector<int64_t> order;
        std::vector<double> s(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          s[size_t(i)] = narrow::load(scores.dtype, scores.raw, (b * classes + c) * n + i);
          if (s[size_t(i)] > score_limit) order.push_back(i);
        }
        std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) { return s[size_t(l)] > s[size_t(r)]; });
        std::vector<int64_t> kept;
        for (int64_t i : order) {
          if (int64_t(kept.size()) >= max_out) break;
          bool keep = true;
          for (int64_t j : kept)
            if (iou(box[size_t(i)], box[size_t(j)]) > iou_limit) keep = false;
          if (!keep) continue;
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
    int64_t dims[2] = {int64_t(selected.size() / 3), 3};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_INT64, dims, &y));
    if (!selected.empty()) std::memcpy(y.raw, selected.data(), selected.size() * sizeof(int64_t));
    return nullptr;
  }

 private:
  static double iou(const std::array<double, 4>& a, const std::array<double, 4>& b) {
    double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    if (area_a <= 0 || area_b <= 0) return 0;
    double h = std::max(0.0, std::min(a[2], b[2]) - std::max(a[0], b[0]));
    double w = std::max(0.0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
    double inter = h * w;
    return inter / (area_a + area_b - inter);
  }

  std::string label_;
  bool center_;
};

}  // namespace

void register_non_max_suppression_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("NonMaxSuppression").since(10).input_types({0, 1, 3, 4}, sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<NmsKernel>());
}

}  // namespace onyx::cpu
