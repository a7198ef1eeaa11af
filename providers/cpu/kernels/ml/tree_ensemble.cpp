// tree_ensemble.cpp: ai.onnx.ml TreeEnsemble (opset 5). Each tree is walked
// from its root: node k compares X[featureids[k]] with splits[k] by its
// mode (0 <=, 1 <, 2 >=, 3 >, 4 ==, 5 !=, 6 membership in its segment of
// membership_values, segments separated by NaN); the true/false ids name
// the next node, or a leaf when the matching *leafs flag is set. Leaves add
// leaf_weights to target leaf_targetids; trees combine by
// aggregate_function (0 average, 1 sum, 2 min, 3 max), then post_transform
// (0 none, 1 softmax, 2 logistic, 3 softmax_zero; 4 probit is declined).
// NaN features take the false branch. In double.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

std::vector<double> tensor_values(const sdk::NodeInfo& node, const char* name) {
  std::vector<double> out;
  const sdk::Attribute* a = node.attr(name);
  if (!a || a->type != ONYX_ATTR_TENSOR || !a->tensor) return out;
  const sdk::ConstantTensor& t = *a->tensor;
  for (int64_t i = 0; i < t.size(); ++i) out.push_back(narrow::load(t.dtype, t.bytes.data(), i));
  return out;
}

class TreeEnsembleKernel final : public sdk::Kernel {
 public:
  explicit TreeEnsembleKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        aggregate_(node.get_int("aggregate_function", 1)),
        post_(node.get_int("post_transform", 0)),
        targets_(node.get_int("n_targets", 1)),
        roots_(node.get_ints("tree_roots")),
        features_(node.get_ints("nodes_featureids")),
        true_ids_(node.get_ints("nodes_truenodeids")),
        false_ids_(node.get_ints("nodes_falsenodeids")),
        true_leaf_(node.get_ints("nodes_trueleafs")),
        false_leaf_(node.get_ints("nodes_falseleafs")),
        leaf_targets_(node.get_ints("leaf_targetids")),
        modes_(tensor_values(node, "nodes_modes")),
        splits_(tensor_values(node, "nodes_splits")),
        leaf_weights_(tensor_values(node, "leaf_weights")) {
    // Membership sets, one per membership node in node order.
    std::vector<double> members = tensor_values(node, "membership_values");
    size_t next = 0;
    sets_.resize(modes_.size());
    for (size_t k = 0; k < modes_.size(); ++k) {
      if (modes_[k] != 6) continue;
      while (next < members.size() && !std::isnan(members[next])) sets_[k].push_back(members[next++]);
      ++next;  // the NaN separator
    }
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    const size_t nodes = modes_.size();
    if (features_.size() != nodes || splits_.size() != nodes || true_ids_.size() != nodes || false_ids_.size() != nodes ||
        true_leaf_.size() != nodes || false_leaf_.size() != nodes || leaf_targets_.size() != leaf_weights_.size())
      return util::fail(label_, "the node and leaf attribute lists differ in length");
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, cols = x.rank() == 2 ? x.dim(1) : x.size();
    int64_t dims[2] = {rows, targets_};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    std::vector<double> score(static_cast<size_t>(targets_));
    for (int64_t r = 0; r < rows; ++r) {
      const bool extreme = aggregate_ == 2 || aggregate_ == 3;
      std::fill(score.begin(), score.end(), extreme ? NAN : 0.0);
      for (int64_t root : roots_) {
        int64_t k = root;
        for (size_t steps = 0; steps <= nodes; ++steps) {
          if (k < 0 || size_t(k) >= nodes) return util::fail(label_, "tree node id %" PRId64 " is out of range", k);
          int64_t f = features_[size_t(k)];
          if (f < 0 || f >= cols) return util::fail(label_, "feature id %" PRId64 " is outside X's %" PRId64 " columns", f, cols);
          double v = narrow::load(x.dtype, x.raw, r * cols + f), s = splits_[size_t(k)];
          bool go = false;
          switch (int(modes_[size_t(k)])) {
            case 0: go = v <= s; break;
            case 1: go = v < s; break;
            case 2: go = v >= s; break;
            case 3: go = v > s; break;
            case 4: go = v == s; break;
            case 5: go = v != s && !std::isnan(v); break;
            default: go = std::find(sets_[size_t(k)].begin(), sets_[size_t(k)].end(), v) != sets_[size_t(k)].end(); break;
          }
          int64_t next = go ? true_ids_[size_t(k)] : false_ids_[size_t(k)];
          if (!(go ? true_leaf_[size_t(k)] : false_leaf_[size_t(k)])) {
            k = next;
            continue;
          }
          if (next < 0 || size_t(next) >= leaf_weights_.size()) return util::fail(label_, "leaf id %" PRId64 " is out of range", next);
          int64_t t = leaf_targets_[size_t(next)];
          if (t < 0 || t >= targets_) return util::fail(label_, "leaf target %" PRId64 " is out of range", t);
          double w = leaf_weights_[size_t(next)], &acc = score[size_t(t)];
          if (aggregate_ == 2) acc = std::isnan(acc) ? w : std::min(acc, w);
          else if (aggregate_ == 3) acc = std::isnan(acc) ? w : std::max(acc, w);
          else acc += w;
          break;
        }
      }
      for (double& v : score) {
        if (extreme && std::isnan(v)) v = 0;
        if (aggregate_ == 0 && !roots_.empty()) v /= double(roots_.size());
      }
      post_transform(score);
      for (int64_t t = 0; t < targets_; ++t) narrow::store(y.dtype, y.raw, r * targets_ + t, score[size_t(t)], true);
    }
    return nullptr;
  }

 private:
  void post_transform(std::vector<double>& v) const {
    if (post_ == 2)
      for (double& e : v) e = 1 / (1 + std::exp(-e));
    if (post_ == 1 || post_ == 3) {
      double top = -INFINITY, sum = 0;
      for (double e : v) top = std::max(top, e);
      for (double& e : v) sum += (e = (post_ == 3 && e == 0) ? 0.0 : std::exp(e - top));
      for (double& e : v) e = sum > 0 ? e / sum : 0;
    }
  }

  std::string label_;
  int64_t aggregate_, post_, targets_;
  std::vector<int64_t> roots_, features_, true_ids_, false_ids_, true_leaf_, false_leaf_, leaf_targets_;
  std::vector<double> modes_, splits_, leaf_weights_;
  std::vector<std::vector<double>> sets_;
};

}  // namespace

void register_tree_ensemble_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("TreeEnsemble", "ai.onnx.ml")
                   .since(5)
                   .input_type(0, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .check([](const sdk::NodeInfo& n) {
                     return n.get_int("post_transform", 0) == 4 ? std::string("post_transform PROBIT is not implemented")
                                                                : std::string();
                   })
                   .create<TreeEnsembleKernel>());
}

}  // namespace onyx::cpu
