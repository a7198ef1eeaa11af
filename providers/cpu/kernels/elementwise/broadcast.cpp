// broadcast.cpp: the broadcasting rules of elementwise.h, shared by the
// element-wise files.
#include "kernels/elementwise/elementwise.h"

#include <algorithm>

namespace onyx::cpu::ew {

std::string broadcast_shape(std::initializer_list<std::span<const int64_t>> shapes,
                            std::vector<int64_t>* out) {
  size_t rank = 0;
  for (auto s : shapes) rank = std::max(rank, s.size());
  out->assign(rank, 1);
  // Align the shapes on their last dim; a dim of 1 stretches to the other.
  for (auto s : shapes) {
    size_t pad = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = (*out)[pad + d];
      if (s[d] == o || s[d] == 1) continue;
      if (o == 1) {
        o = s[d];
        continue;
      }
      std::string text;
      for (auto t : shapes) text += (text.empty() ? "" : " and ") + util::dims_str(t);
      return "shapes " + text + " cannot be broadcast (dim " + std::to_string(pad + d) +
             " of the result: " + std::to_string(o) + " vs " + std::to_string(s[d]) + ")";
    }
  }
  return {};
}

LegacyBroadcast LegacyBroadcast::read(const sdk::NodeInfo& node) {
  LegacyBroadcast l;
  l.enabled = node.domain.empty() && node.opset < 7;  // ai.onnx's opsets only
  l.broadcast = node.get_int("broadcast", 0) != 0;
  l.has_axis = node.has("axis");
  l.axis = node.get_int("axis", 0);
  return l;
}

std::string LegacyBroadcast::apply(std::span<const int64_t> a, std::span<const int64_t> b,
                                   std::vector<int64_t>* b_padded) const {
  b_padded->assign(b.begin(), b.end());
  if (!broadcast) {
    if (std::equal(a.begin(), a.end(), b.begin(), b.end())) return {};
    return "input shapes " + util::dims_str(a) + " and " + util::dims_str(b) +
           " differ and attribute broadcast is 0 (opset < 7 form)";
  }
  int64_t ra = int64_t(a.size()), rb = int64_t(b.size());
  int64_t start = has_axis ? (axis < 0 ? axis + ra : axis) : ra - rb;
  if (rb > ra || start < 0 || start + rb > ra)
    return "input 1 of shape " + util::dims_str(b) + " does not fit into input 0 of shape " +
           util::dims_str(a) + " at axis " + std::to_string(start);
  b_padded->assign(size_t(ra), 1);
  for (int64_t d = 0; d < rb; ++d) {
    if (b[size_t(d)] != 1 && b[size_t(d)] != a[size_t(start + d)])
      return "input 1 of shape " + util::dims_str(b) + " does not match input 0 of shape " +
             util::dims_str(a) + " at axis " + std::to_string(start);
    (*b_padded)[size_t(start + d)] = b[size_t(d)];
  }
  return {};
}

BroadcastPlan make_plan(std::initializer_list<std::span<const int64_t>> inputs,
                        std::span<const int64_t> out) {
  BroadcastPlan plan;
  size_t n = inputs.size(), rank = out.size();
  plan.count = sdk::element_count(out);
  // Per kept dim: its size and which inputs are broadcast along it.
  std::vector<std::vector<bool>> broadcast;
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    std::vector<bool> flags;
    for (auto in : inputs) {
      size_t pad = rank - in.size();
      flags.push_back(d < pad || in[d - pad] == 1);
    }
    if (!broadcast.empty() && broadcast.back() == flags) {
      plan.dims.back() *= out[d];
    } else {
      plan.dims.push_back(out[d]);
      broadcast.push_back(std::move(flags));
    }
  }
  if (plan.dims.empty()) {  // a single element
    plan.dims.push_back(1);
    broadcast.emplace_back(n, false);
  }
  plan.strides.assign(n, std::vector<int64_t>(plan.dims.size(), 0));
  for (size_t k = 0; k < n; ++k) {
    int64_t step = 1;
    for (size_t d = plan.dims.size(); d-- > 0;) {
      if (broadcast[d][k]) continue;
      plan.strides[k][d] = step;
      step *= plan.dims[d];
    }
  }
  return plan;
}

}  // namespace onyx::cpu::ew
