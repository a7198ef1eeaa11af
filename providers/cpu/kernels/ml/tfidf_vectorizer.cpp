// tfidf_vectorizer.cpp: TfIdfVectorizer (opset 9) on integer input: n-gram
// counts (TF), their weights (IDF) or both (TFIDF) per row.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

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

void register_tfidf_vectorizer_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("TfIdfVectorizer")
                   .since(9)
                   .input_type(0, sdk::dtypes::kSigned)
                   .check([](const sdk::NodeInfo& n) {
                     return n.has("pool_strings") ? std::string("string pools are not supported") : std::string();
                   })
                   .create<TfIdfKernel>());
}

}  // namespace onyx::cpu
