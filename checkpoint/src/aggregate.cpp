// aggregate.cpp: aggregate(), the inverse of shard() (shard.cpp) for shards
// of any contiguous partition: one file per rank, joined in rank order, with
// every value stored whole in several ranks checked to agree.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "onyx/checkpoint_tools.h"

namespace onyx::checkpoint {
namespace {

// The original order of names that ranks list in part: each rank's list is
// a subsequence of it, so it is the topological order of "comes before" in
// every rank; names not ordered by that come in rank order (ZeRO ranges are
// contiguous). A cycle (ranks disagreeing on order) leaves names out.
std::vector<std::string> merged_order(const std::vector<std::vector<std::string>>& per_rank) {
  struct Node {
    std::pair<size_t, size_t> key;  // (first rank, index there)
    std::set<std::string> next;
    size_t pending = 0;  // names that must come first
  };
  std::map<std::string, Node> nodes;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    const auto& list = per_rank[r];
    for (size_t k = 0; k < list.size(); ++k) {
      auto [it, added] = nodes.try_emplace(list[k]);
      if (added) it->second.key = {r, k};
      if (k > 0 && nodes[list[k - 1]].next.insert(list[k]).second) ++it->second.pending;
    }
  }
  std::set<std::pair<std::pair<size_t, size_t>, std::string>> ready;
  for (const auto& [name, node] : nodes)
    if (node.pending == 0) ready.insert({node.key, name});
  std::vector<std::string> order;
  while (!ready.empty()) {
    std::string name = ready.begin()->second;
    ready.erase(ready.begin());
    order.push_back(name);
    for (const std::string& n : nodes[name].next)
      if (--nodes[n].pending == 0) ready.insert({nodes[n].key, n});
  }
  return order;
}

// Merges one tensor list across ranks. per_rank[r] is rank r's list, or
// null when that rank has no such list (it holds none of the parameter).
class ListMerger {
 public:
  explicit ListMerger(std::string kind) : kind_(std::move(kind)) {}

  StatusOr<std::vector<TensorRecord>> merge(const std::vector<const std::vector<TensorRecord>*>& per_rank) {
    struct Pieces {
      const TensorRecord* first = nullptr;
      uint32_t first_rank = 0;
      std::vector<std::pair<uint32_t, const TensorRecord*>> all;
    };
    std::map<std::string, Pieces> by_name;
    uint32_t lists = 0;
    for (uint32_t r = 0; r < per_rank.size(); ++r) {
      if (!per_rank[r]) continue;
      ++lists;
      for (const TensorRecord& t : *per_rank[r]) {
        Pieces& p = by_name[t.name];
        if (!p.first) {
          p.first = &t;
          p.first_rank = r;
        }
        p.all.emplace_back(r, &t);
      }
    }
    std::vector<std::vector<std::string>> names;
    for (const auto* list : per_rank) {
      names.emplace_back();
      if (list)
        for (const TensorRecord& t : *list) names.back().push_back(t.name);
    }
    std::vector<std::string> order = merged_order(names);
    if (order.size() != by_name.size())
      return invalid_argument(kind_ + "s are listed in different orders by different ranks");
    std::vector<TensorRecord> merged;
    for (const std::string& name : order) {
      const Pieces& p = by_name[name];
      std::string where = kind_ + " '" + name + "'";
      if (p.first->slice) {
        ONYX_ASSIGN_OR_RETURN(TensorRecord joined, join(p.all, where));
        merged.push_back(std::move(joined));
        continue;
      }
      if (p.all.size() != lists)
        return invalid_argument(where + " is unsharded but only " + std::to_string(p.all.size()) + " of " +
                                std::to_string(lists) + " ranks hold it");
      for (const auto& [rank, t] : p.all)
        ONYX_RETURN_IF_ERROR(same_unsharded(*p.first, p.first_rank, *t, rank, where));
      merged.push_back(*p.first);
      merged.back().checksum.reset();
    }
    return merged;
  }

 private:
  static Status same_unsharded(const TensorRecord& a, uint32_t rank_a, const TensorRecord& b, uint32_t rank_b,
                               const std::string& where) {
    std::string ranks = " between rank " + std::to_string(rank_a) + " and rank " + std::to_string(rank_b);
    if (b.slice) return invalid_argument(where + " is sliced in one rank and whole in another" + ranks);
    if (a.dtype != b.dtype || a.shape != b.shape)
      return invalid_argument(where + " differs" + ranks + ": " + dtype_name(a.dtype) + " " + shape_string(a.shape) +
                              " vs " + dtype_name(b.dtype) + " " + shape_string(b.shape));
    if (a.has_data() != b.has_data()) return invalid_argument(where + " has data in one rank only" + ranks);
    if (a.has_data() && std::memcmp(a.data.data(), b.data.data(), a.bytes()) != 0)
      return invalid_argument(where + " is unsharded but its values differ" + ranks);
    return {};
  }

  // Concatenates slices in rank order; they must tile the full tensor.
  static StatusOr<TensorRecord> join(const std::vector<std::pair<uint32_t, const TensorRecord*>>& pieces,
                                     const std::string& where) {
    const TensorRecord& first = *pieces.front().second;
    TensorRecord full;
    full.name = first.name;
    full.dtype = first.dtype;
    full.shape = first.slice->full_shape;
    const int64_t count = element_count(full.shape);
    const size_t element = dtype_size(full.dtype);
    if (element == 0) return invalid_argument(where + ": " + dtype_name(full.dtype) + " tensors cannot be sliced");
    // First check that the slices tile the tensor, then allocate: a 10-element
    // slice of a [2^30] tensor made aggregate allocate 4 GiB before finding
    // that the rest was missing.
    int64_t next = 0;
    for (const auto& [rank, t] : pieces) {
      std::string at = where + " in rank " + std::to_string(rank);
      if (!t->slice) return invalid_argument(where + " is sliced in one rank and whole in rank " + std::to_string(rank));
      if (t->dtype != full.dtype || t->slice->full_shape != full.shape)
        return invalid_argument(at + " is a slice of " + dtype_name(t->dtype) + " " +
                                shape_string(t->slice->full_shape) + ", other ranks of " + dtype_name(full.dtype) +
                                " " + shape_string(full.shape));
      if (t->slice->offset != next)
        return invalid_argument(at + " starts at element " + std::to_string(t->slice->offset) + " but the ranks before it end at " +
                                std::to_string(next) + (t->slice->offset < next ? " (overlap)" : " (gap)"));
      if (t->has_data() != first.has_data()) return invalid_argument(at + " has data in some ranks only");
      next += t->shape[0];
    }
    if (next != count)
      return invalid_argument(where + ": the slices cover " + std::to_string(next) + " of its " + std::to_string(count) +
                              " elements (a shard is missing)");
    if (!first.has_data()) return full;
    full.data = Tensor::allocate(full.dtype, full.shape);
    for (const auto& [rank, t] : pieces)
      std::memcpy(static_cast<std::byte*>(full.data.data()) + size_t(t->slice->offset) * element, t->data.data(),
                  t->bytes());
    return full;
  }

  std::string kind_;
};

Status check_agreement(std::span<const Checkpoint* const> ranks) {
  const Checkpoint& first = *ranks[0];
  for (const Checkpoint* c : ranks) {
    std::string rank = "rank " + std::to_string(c->metadata.shard_index);
    if (c->metadata.model_identity != first.metadata.model_identity)
      return invalid_argument("model identity differs between rank 0 (\"" + first.metadata.model_identity + "\") and " +
                              rank + " (\"" + c->metadata.model_identity + "\")");
    for (const auto& [name, value] : first.properties) {
      auto it = c->properties.find(name);
      if (it == c->properties.end() || it->second.index() != value.index() ||
          (value.index() == 1 ? std::memcmp(&std::get<double>(value), &std::get<double>(it->second), 8) != 0
                              : it->second != value))
        return invalid_argument("property '" + name + "' differs between rank 0 and " + rank);
    }
    if (c->properties.size() != first.properties.size())
      return invalid_argument("rank 0 and " + rank + " have different sets of properties");
    if (c->nominal() != first.nominal()) return invalid_argument("rank 0 and " + rank + " differ in being nominal");
  }
  return {};
}

StatusOr<std::vector<OptimizerGroup>> merge_optimizer(std::span<const Checkpoint* const> ranks) {
  const Checkpoint& first = *ranks[0];
  for (const Checkpoint* c : ranks) {
    std::string rank = "rank " + std::to_string(c->metadata.shard_index);
    if (c->optimizer.empty() != first.optimizer.empty())
      return invalid_argument(std::string("rank 0 ") + (first.optimizer.empty() ? "has no" : "has") +
                              " optimizer state but " + rank + (first.optimizer.empty() ? " has" : " has none") +
                              " (aggregate weights only to ignore optimizer state)");
    if (c->optimizer.size() != first.optimizer.size())
      return invalid_argument("rank 0 and " + rank + " have different numbers of optimizer groups");
    for (size_t g = 0; g < first.optimizer.size(); ++g) {
      const OptimizerGroup &a = first.optimizer[g], &b = c->optimizer[g];
      std::string where = "optimizer group '" + a.name + "'";
      if (a.name != b.name) return invalid_argument(where + " of rank 0 is '" + b.name + "' in " + rank);
      if (a.step != b.step)
        return invalid_argument(where + ": step " + std::to_string(a.step) + " in rank 0 but " +
                                std::to_string(b.step) + " in " + rank);
      if (std::memcmp(&a.initial_learning_rate, &b.initial_learning_rate, sizeof(double)) != 0)
        return invalid_argument(where + ": initial learning rate differs between rank 0 and " + rank);
    }
  }
  std::vector<OptimizerGroup> merged;
  for (size_t g = 0; g < first.optimizer.size(); ++g) {
    OptimizerGroup& out = merged.emplace_back();
    out.name = first.optimizer[g].name;
    out.step = first.optimizer[g].step;
    out.initial_learning_rate = first.optimizer[g].initial_learning_rate;
    std::vector<std::vector<std::string>> names;
    for (const Checkpoint* c : ranks) {
      names.emplace_back();
      for (const ParameterState& s : c->optimizer[g].parameters) names.back().push_back(s.parameter);
    }
    std::vector<std::string> parameters = merged_order(names);
    std::set<std::string> distinct;
    for (const auto& list : names) distinct.insert(list.begin(), list.end());
    if (parameters.size() != distinct.size())
      return invalid_argument("optimizer group '" + out.name + "': ranks list parameters in different orders");
    for (const std::string& parameter : parameters) {
      std::vector<const std::vector<TensorRecord>*> per_rank;
      for (const Checkpoint* c : ranks) {
        const auto& list = c->optimizer[g].parameters;
        auto it = std::find_if(list.begin(), list.end(), [&](const ParameterState& s) { return s.parameter == parameter; });
        per_rank.push_back(it == list.end() ? nullptr : &it->tensors);
      }
      ListMerger merger("optimizer group '" + out.name + "' state of '" + parameter + "'");
      ONYX_ASSIGN_OR_RETURN(std::vector<TensorRecord> tensors, merger.merge(per_rank));
      out.parameters.push_back({parameter, std::move(tensors)});
    }
  }
  return merged;
}

}  // namespace

StatusOr<Checkpoint> aggregate(std::span<const Checkpoint> shards, const AggregateOptions& options) {
  if (shards.empty()) return invalid_argument("no shards to aggregate");
  const uint32_t world = shards[0].metadata.shard_count;
  std::vector<const Checkpoint*> ranks(world, nullptr);
  for (const Checkpoint& c : shards) {
    ONYX_RETURN_IF_ERROR(validate(c));
    if (c.metadata.shard_count != world)
      return invalid_argument("shards disagree on the world size: " + std::to_string(world) + " and " +
                              std::to_string(c.metadata.shard_count));
    if (ranks[c.metadata.shard_index])
      return invalid_argument("rank " + std::to_string(c.metadata.shard_index) + " is given twice");
    ranks[c.metadata.shard_index] = &c;
  }
  for (uint32_t r = 0; r < world; ++r)
    if (!ranks[r])
      return invalid_argument("rank " + std::to_string(r) + " of " + std::to_string(world) +
                              " is missing (got " + std::to_string(shards.size()) + " shards)");
  ONYX_RETURN_IF_ERROR(check_agreement(ranks));

  Checkpoint out;
  out.metadata.model_identity = ranks[0]->metadata.model_identity;
  out.properties = ranks[0]->properties;
  std::vector<const std::vector<TensorRecord>*> trainable, frozen;
  for (const Checkpoint* c : ranks) {
    trainable.push_back(&c->module.trainable);
    frozen.push_back(&c->module.frozen);
  }
  ONYX_ASSIGN_OR_RETURN(out.module.trainable, ListMerger("trainable parameter").merge(trainable));
  ONYX_ASSIGN_OR_RETURN(out.module.frozen, ListMerger("frozen parameter").merge(frozen));
  if (!options.weights_only) {
    ONYX_ASSIGN_OR_RETURN(out.optimizer, merge_optimizer(ranks));
  }
  ONYX_RETURN_IF_ERROR(validate(out).with_context("the aggregated checkpoint"));
  return out;
}

}  // namespace onyx::checkpoint
