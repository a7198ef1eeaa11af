// selection_ops.cpp: NonMaxSuppression (10, 11), Unique (11) and
// TfIdfVectorizer on integer input (9).
#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "kernels/extra_ops.h"
#include "kernels/narrow_types.h"

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

// Unique: the distinct elements (or slices along `axis`), sorted or in order
// of first appearance, with first indices, inverse indices and counts.
class UniqueKernel final : public sdk::Kernel {
 public:
  explicit UniqueKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        has_axis_(node.has("axis")),
        axis_(node.get_int("axis", 0)),
        sorted_(node.get_int("sorted", 1) != 0) {
    for (const auto& o : node.outputs) wanted_.push_back(o.present);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t axis = 0, outer = 1, n = x.size(), inner = 1;
    if (has_axis_) {
      if (!util::normalize_axis(axis_, int64_t(x.rank()), &axis)) return util::fail(label_, "axis is out of range");
      n = x.dim(size_t(axis));
      for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
      for (int64_t d = axis + 1; d < int64_t(x.rank()); ++d) inner *= x.dim(size_t(d));
    }
    // Slice k as doubles (element order: outer, then inner).
    auto slice = [&](int64_t k) {
      std::vector<double> v;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) v.push_back(narrow::load(x.dtype, x.raw, (o * n + k) * inner + i));
      return v;
    };
    std::vector<std::vector<double>> slices;
    for (int64_t k = 0; k < n; ++k) slices.push_back(slice(k));
    std::vector<int64_t> first;  // first index of each unique slice, in first-appearance order
    std::vector<int64_t> group(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      auto it = std::find_if(first.begin(), first.end(), [&](int64_t f) { return slices[size_t(f)] == slices[size_t(k)]; });
      group[size_t(k)] = int64_t(it - first.begin());
      if (it == first.end()) first.push_back(k);
    }
    std::vector<int64_t> order(first.size());
    std::iota(order.begin(), order.end(), 0);
    if (sorted_)
      std::sort(order.begin(), order.end(),
                [&](int64_t l, int64_t r) { return slices[size_t(first[size_t(l)])] < slices[size_t(first[size_t(r)])]; });
    std::vector<int64_t> rank_of(first.size());
    for (size_t p = 0; p < order.size(); ++p) rank_of[size_t(order[p])] = int64_t(p);
    const int64_t u = int64_t(first.size());

    std::vector<int64_t> y_dims = has_axis_ ? std::vector<int64_t>(x.dims.begin(), x.dims.end()) : std::vector<int64_t>{u};
    if (has_axis_) y_dims[size_t(axis)] = u;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, y_dims, &y));
    const size_t es = sdk::dtype_size(x.dtype);
    for (int64_t p = 0; p < u; ++p) {
      int64_t k = first[size_t(order[size_t(p)])];
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(static_cast<unsigned char*>(y.raw) + size_t((o * u + p) * inner) * es,
                    static_cast<const unsigned char*>(x.raw) + size_t((o * n + k) * inner) * es, size_t(inner) * es);
    }
    std::vector<int64_t> indices(static_cast<size_t>(u)), inverse(static_cast<size_t>(n)), counts(static_cast<size_t>(u), 0);
    for (int64_t p = 0; p < u; ++p) indices[size_t(p)] = first[size_t(order[size_t(p)])];
    for (int64_t k = 0; k < n; ++k) {
      inverse[size_t(k)] = rank_of[size_t(group[size_t(k)])];
      ++counts[size_t(inverse[size_t(k)])];
    }
    const std::vector<int64_t>* extra[3] = {&indices, &inverse, &counts};
    for (size_t k = 1; k < 4 && k < wanted_.size(); ++k) {
      if (!wanted_[k]) continue;
      int64_t len = int64_t(extra[k - 1]->size());
      sdk::Tensor t;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(k, ONYX_DTYPE_INT64, std::span<const int64_t>(&len, 1), &t));
      if (len) std::memcpy(t.raw, extra[k - 1]->data(), size_t(len) * sizeof(int64_t));
    }
    return nullptr;
  }

 private:
  std::string label_;
  bool has_axis_;
  int64_t axis_;
  bool sorted_;
  std::vector<bool> wanted_;
};

// TfIdfVectorizer: counts, per row of X ([C] or [N, C]), the pool's n-grams
// of length min_gram_length..max_gram_length whose items lie skip + 1 apart
// (skip 0..max_skip_count; unigrams once), into output slot ngram_indexes[k]
// of the k-th pool n-gram. TF: the counts; IDF: weight where the count is
// non-zero; TFIDF: count * weight (weights default to 1).
class TfIdfKernel final : public sdk::Kernel {
 public:
  explicit TfIdfKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        min_n_(node.get_int("min_gram_length", 1)),
        max_n_(node.get_int("max_gram_length", 1)),
        max_skip_(node.get_int("max_skip_count", 0)),
        mode_(node.get_string("mode", "TF")),
        counts_(node.get_ints("ngram_counts")),
        indexes_(node.get_ints("ngram_indexes")),
        pool_(node.get_ints("pool_int64s")),
        weights_(node.get_floats("weights")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> xs;
    if (!util::read_ints(x, &xs) || x.rank() < 1 || x.rank() > 2) return util::fail(label_, "X must be 1-D or 2-D int32/int64");
    int64_t width = 0;
    for (int64_t i : indexes_) width = std::max(width, i + 1);
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, c = x.dim(x.rank() - 1);
    // Pool n-grams of each length: (items, pool position).
    std::vector<std::pair<std::vector<int64_t>, size_t>> grams;
    size_t position = 0;
    for (size_t n = 1; n <= counts_.size(); ++n) {
      size_t begin = size_t(counts_[n - 1]), end = n < counts_.size() ? size_t(counts_[n]) : pool_.size();
      for (size_t at = begin; at + n <= end; at += n, ++position)
        if (int64_t(n) >= min_n_ && int64_t(n) <= max_n_)
          grams.emplace_back(std::vector<int64_t>(pool_.begin() + int64_t(at), pool_.begin() + int64_t(at + n)), position);
    }
    std::vector<int64_t> dims = x.rank() == 2 ? std::vector<int64_t>{rows, width} : std::vector<int64_t>{width};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, dims, &y));
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> count(size_t(width), 0.0);
      for (const auto& [items, pos] : grams) {
        const int64_t n = int64_t(items.size());
        if (pos >= indexes_.size()) return util::fail(label_, "ngram_indexes has no entry for pool n-gram %zu", pos);
        for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip_); ++skip)
          for (int64_t i = 0; i + (n - 1) * (skip + 1) < c; ++i) {
            bool match = true;
            for (int64_t k = 0; k < n && match; ++k) match = xs[size_t(r * c + i + k * (skip + 1))] == items[size_t(k)];
            if (match) count[size_t(indexes_[pos])] += 1;
          }
      }
      for (int64_t k = 0; k < width; ++k) {
        double w = size_t(k) < weights_.size() ? weights_[size_t(k)] : 1.0, v = count[size_t(k)];
        if (mode_ == "IDF") v = v > 0 ? w : 0;
        else if (mode_ == "TFIDF") v *= w;
        y.data<float>()[r * width + k] = float(v);
      }
    }
    return nullptr;
  }

 private:
  std::string label_;
  int64_t min_n_, max_n_, max_skip_;
  std::string mode_;
  std::vector<int64_t> counts_, indexes_, pool_;
  std::vector<float> weights_;
};

}  // namespace

void register_selection_kernels(sdk::KernelRegistry& registry) {
  sdk::KernelDef tfidf;
  tfidf.op_type = "TfIdfVectorizer";
  tfidf.since_version = 9;
  tfidf.supports = [](const sdk::NodeInfo& n) {
    std::string why = util::require_types(n, util::kSigned, {0});
    if (why.empty() && n.has("pool_strings")) why = "string pools are not supported";
    return why;
  };
  tfidf.create = [](const sdk::NodeInfo& n) { return std::make_unique<TfIdfKernel>(n); };
  registry.add(std::move(tfidf));

  sdk::KernelDef nms;
  nms.op_type = "NonMaxSuppression";
  nms.since_version = 10;
  nms.supports = [](const sdk::NodeInfo& n) { return util::require_types(n, util::kFloat | util::kHalf, {0, 1, 3, 4}); };
  nms.create = [](const sdk::NodeInfo& n) { return std::make_unique<NmsKernel>(n); };
  registry.add(std::move(nms));
  sdk::KernelDef unique;
  unique.op_type = "Unique";
  unique.since_version = 11;
  unique.supports = [](const sdk::NodeInfo& n) {
    return util::require_types(n, util::kNumeric | util::kBool | util::kHalf, {0});
  };
  unique.create = [](const sdk::NodeInfo& n) { return std::make_unique<UniqueKernel>(n); };
  registry.add(std::move(unique));
}

}  // namespace onyx::cpu
