// einsum.cpp: Einsum (opset 12) for any equation: explicit or implicit
// output, repeated labels (diagonals), ellipsis with broadcasting. The
// result is a sum over every combination of label values (sizes in real
// equations keep this cheap enough; accumulation is in double).
#include <algorithm>
#include <cinttypes>
#include <map>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// Labels of one operand; '.' entries stand for ellipsis dims, expanded
// once the operand's rank is known.
std::vector<char> parse_term(const std::string& term) {
  std::vector<char> out;
  for (size_t k = 0; k < term.size(); ++k) {
    if (term[k] == '.') {
      out.push_back('.');
      k += 2;
    } else if (term[k] != ' ') {
      out.push_back(term[k]);
    }
  }
  return out;
}

class EinsumKernel final : public sdk::Kernel {
 public:
  explicit EinsumKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), equation_(node.get_string("equation", "")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    std::string lhs = equation_, rhs;
    bool explicit_out = false;
    if (auto arrow = equation_.find("->"); arrow != std::string::npos) {
      lhs = equation_.substr(0, arrow), rhs = equation_.substr(arrow + 2), explicit_out = true;
    }
    std::vector<std::vector<char>> terms;
    for (size_t start = 0;;) {
      size_t comma = lhs.find(',', start);
      terms.push_back(parse_term(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (terms.size() != ctx.input_count())
      return util::fail(label_, "equation '%s' has %zu operands; the node has %zu inputs", equation_.c_str(), terms.size(),
                        ctx.input_count());
    // Ellipsis dims become labels '0', '1', ... aligned from the right.
    size_t ellipsis_rank = 0;
    std::vector<sdk::Tensor> ins;
    for (size_t k = 0; k < terms.size(); ++k) {
      ins.push_back(ctx.in(k));
      size_t named = size_t(std::count_if(terms[k].begin(), terms[k].end(), [](char c) { return c != '.'; }));
      if (ins[k].rank() < named) return util::fail(label_, "operand %zu has rank %zu, fewer than its labels", k, ins[k].rank());
      if (std::count(terms[k].begin(), terms[k].end(), '.')) ellipsis_rank = std::max(ellipsis_rank, ins[k].rank() - named);
    }
    std::map<char, int64_t> size;
    std::vector<std::vector<char>> labels(terms.size());
    for (size_t k = 0; k < terms.size(); ++k) {
      size_t named = size_t(std::count_if(terms[k].begin(), terms[k].end(), [](char c) { return c != '.'; }));
      size_t own = ins[k].rank() - named;
      for (char c : terms[k]) {
        if (c != '.') {
          labels[k].push_back(c);
          continue;
        }
        for (size_t e = ellipsis_rank - own; e < ellipsis_rank; ++e) labels[k].push_back(char('0' + e));
      }
      if (labels[k].size() != ins[k].rank())
        return util::fail(label_, "operand %zu: %zu labels for rank %zu", k, labels[k].size(), ins[k].rank());
      for (size_t d = 0; d < labels[k].size(); ++d) {
        int64_t dim = ins[k].dim(d);
        auto [it, fresh] = size.emplace(labels[k][d], dim);
        if (!fresh && it->second != dim) {
          if (it->second == 1 && labels[k][d] >= '0' && labels[k][d] <= '9') it->second = dim;  // broadcast
          else if (!(dim == 1 && labels[k][d] >= '0' && labels[k][d] <= '9'))
            return util::fail(label_, "label '%c' has sizes %" PRId64 " and %" PRId64, labels[k][d], it->second, dim);
        }
      }
    }
    std::vector<char> out;
    if (explicit_out) {
      for (char c : parse_term(rhs)) {
        if (c != '.') out.push_back(c);
        else
          for (size_t e = 0; e < ellipsis_rank; ++e) out.push_back(char('0' + e));
      }
    } else {
      for (size_t e = 0; e < ellipsis_rank; ++e) out.push_back(char('0' + e));
      std::map<char, int> uses;
      for (const auto& l : labels)
        for (char c : l) ++uses[c];
      for (auto [c, n] : uses)
        if (n == 1 && !(c >= '0' && c <= '9')) out.push_back(c);
    }
    std::vector<char> all;
    for (const auto& [c, n] : size) all.push_back(c);
    std::vector<int64_t> out_dims;
    for (char c : out) {
      if (!size.count(c)) return util::fail(label_, "output label '%c' is not in any operand", c);
      out_dims.push_back(size[c]);
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ins[0].dtype, out_dims, &y));
    std::vector<double> acc(size_t(y.size()), 0.0);
    std::map<char, size_t> slot;
    for (size_t k = 0; k < all.size(); ++k) slot[all[k]] = k;
    std::vector<int64_t> value(all.size(), 0);
    bool empty = false;
    for (char c : all) empty |= size[c] == 0;
    while (!empty) {
      double prod = 1;
      for (size_t k = 0; k < ins.size(); ++k) {
        int64_t index = 0;
        for (size_t d = 0; d < labels[k].size(); ++d)
          index = index * ins[k].dim(d) + (ins[k].dim(d) == 1 ? 0 : value[slot[labels[k][d]]]);
        prod *= narrow::load(ins[k].dtype, ins[k].raw, index);
      }
      int64_t at = 0;
      for (size_t d = 0; d < out.size(); ++d) at = at * out_dims[d] + value[slot[out[d]]];
      acc[size_t(at)] += prod;
      size_t k = all.size();
      while (k-- > 0) {
        if (++value[k] < size[all[k]]) break;
        value[k] = 0;
      }
      if (k == size_t(-1)) break;
    }
    for (size_t i = 0; i < acc.size(); ++i) narrow::store(y.dtype, y.raw, int64_t(i), acc[i], true);
    return nullptr;
  }

 private:
  std::string label_;
  std::string equation_;
};

}  // namespace

void register_einsum_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Einsum").since(12).type_constraint("T", {}, sdk::dtypes::kNumeric | sdk::dtypes::kHalf).create<EinsumKernel>());
}

}  // namespace onyx::cpu
