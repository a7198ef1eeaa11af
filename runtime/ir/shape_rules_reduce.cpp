// shape_rules_reduce.cpp: reductions along axes (Reduce*, ArgMax/ArgMin, TopK).
#include <algorithm>
#include <map>
#include <set>

#include "ir/shape_rules.h"

namespace onyx::runtime::ir::shape {

namespace {

// Reduce*: axes became an input in opset 13 for ReduceSum and in opset 18
// for the others; keepdims keeps reduced axes as 1; no axes means all axes
// unless noop_with_empty_axes.
Status reduce(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  const int64_t rank = ctx.rank(0);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const int64_t axes_input_since = ctx.node().op_type == "ReduceSum" ? 13 : 18;
  const bool axes_as_input = ctx.opset() >= axes_input_since;
  std::optional<std::vector<int64_t>> axes = axes_as_input ? ctx.ints(1) : ctx.attr_ints("axes");
  // An axes input known to be empty needs no value.
  if (axes_as_input && !axes && ctx.rank(1) == 1 && ctx.dims(1)[0] == 0) axes.emplace();
  if (rank < 0) return ctx.set_output_dtype(0, dtype), Status();
  if (axes_as_input && ctx.has_input(1) && !axes) {  // axes computed at run time
    if (keepdims) ctx.set_output_rank(0, dtype, int32_t(rank));
    else ctx.set_output_dtype(0, dtype);
    return Status();
  }
  if (!axes || axes->empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0) return same_as_input(ctx, 0, 0), Status();
    axes.emplace();
    for (int64_t k = 0; k < rank; ++k) axes->push_back(k);
  }
  std::set<int64_t> reduced;
  for (int64_t a : *axes) {
    ONYX_ASSIGN_OR_RETURN(int64_t n, ctx.axis(a, rank));
    reduced.insert(n);  // repeats are harmless here
  }
  Shape out;
  for (int64_t k = 0; k < rank; ++k) {
    if (!reduced.count(k)) out.push_back(ctx.dims(0)[size_t(k)]);
    else if (keepdims) out.push_back(1);
  }
  ctx.set_output(0, dtype, out);
  return Status();
}

Status arg_reduce(InferContext& ctx) {
  const int64_t rank = ctx.rank(0);
  if (rank < 0) return ctx.set_output_dtype(0, ONYX_DTYPE_INT64), Status();
  ONYX_ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.attr_int("axis", 0), rank));
  Shape out = ctx.dims(0);
  if (ctx.attr_int("keepdims", 1) != 0) out[size_t(axis)] = 1;
  else out.erase(out.begin() + axis);
  ctx.set_output(0, ONYX_DTYPE_INT64, out);
  return Status();
}

// TopK: values and int64 indices, with `axis` shortened to k (attribute
// before opset 10, then a 1-element input).
Status top_k(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  const int64_t rank = ctx.rank(0);
  if (rank < 0) {
    ctx.set_output_dtype(0, dtype);
    ctx.set_output_dtype(1, ONYX_DTYPE_INT64);
    return Status();
  }
  ONYX_ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.attr_int("axis", -1), rank));
  int64_t k = kUnknown;
  if (ctx.opset() < 10) {
    k = ctx.attr_int("k", kUnknown);
  } else if (auto kv = ctx.ints(1)) {
    if (kv->size() != 1) return ctx.error("K must hold one value, has " + std::to_string(kv->size()));
    if ((*kv)[0] < 0) return ctx.error("K must not be negative, is " + std::to_string((*kv)[0]));
    k = (*kv)[0];
  }
  Shape out = ctx.dims(0);
  if (k >= 0 && out[size_t(axis)] >= 0 && k > out[size_t(axis)])
    return ctx.error("k = " + std::to_string(k) + " exceeds axis " + std::to_string(axis) + " of " +
                     shape_string(out));
  out[size_t(axis)] = k;
  ctx.set_output(0, dtype, out);
  ctx.set_output(1, ONYX_DTYPE_INT64, out);
  return Status();
}

// Einsum: output letters (explicit after "->", else the letters used once,
// alphabetically), each with the size its inputs give it; "..." stands for
// the broadcast of the inputs' remaining leading dims.
Status einsum(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  std::string eq;
  for (char c : ctx.attr_string("equation", ""))
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') terms.emplace_back();
    else terms.back().push_back(c);
  }
  if (terms.size() != ctx.input_count())
    return ctx.error("equation '" + eq + "' has " + std::to_string(terms.size()) + " operands for " +
                     std::to_string(ctx.input_count()) + " inputs");
  std::map<char, int64_t> size;
  std::map<char, int> uses;
  std::vector<TypeShape> ellipses;
  bool all_known = true;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& term = terms[i];
    const size_t dots = term.find("...");
    const std::string letters = dots == std::string::npos ? term : term.substr(0, dots) + term.substr(dots + 3);
    for (char c : letters) ++uses[c], size.emplace(c, kUnknown);
    if (ctx.rank(i) < 0) {
      all_known = false;
      continue;
    }
    const Shape& d = ctx.dims(i);
    const int64_t ell_rank = int64_t(d.size()) - int64_t(letters.size());
    if (ell_rank < 0 || (dots == std::string::npos && ell_rank != 0))
      return ctx.error("operand '" + term + "' does not match input " + std::to_string(i) + " " + shape_string(d));
    const size_t before = dots == std::string::npos ? letters.size() : dots;
    ellipses.push_back({dtype, int32_t(ell_rank), Shape(d.begin() + long(before), d.begin() + long(before) + ell_rank)});
    for (size_t k = 0; k < letters.size(); ++k) {
      const int64_t dim = d[k < before ? k : k + size_t(ell_rank)];
      int64_t& known = size[letters[k]];
      if (dim < 0) continue;
      if (known >= 0 && known != dim && known != 1 && dim != 1)
        return ctx.error("letter '" + std::string(1, letters[k]) + "' is both " + std::to_string(known) +
                         " and " + std::to_string(dim));
      if (known < 0 || known == 1) known = dim;
    }
  }
  std::string out_term;
  if (arrow != std::string::npos) {
    out_term = eq.substr(arrow + 2);
  } else {
    if (lhs.find("...") != std::string::npos) out_term = "...";
    for (const auto& [c, n] : uses)
      if (n == 1) out_term += c;
  }
  const bool has_ellipsis = out_term.find("...") != std::string::npos;
  if (has_ellipsis && !all_known) return ctx.set_output_dtype(0, dtype), Status();
  TypeShape ell{dtype, 0, {}};
  if (has_ellipsis) { ONYX_ASSIGN_OR_RETURN(ell, broadcast(ctx, ellipses)); }
  Shape out;
  for (size_t k = 0; k < out_term.size(); ++k) {
    if (out_term.compare(k, 3, "...") == 0) {
      out.insert(out.end(), ell.dims.begin(), ell.dims.end());
      k += 2;
    } else if (auto it = size.find(out_term[k]); it != size.end()) {
      out.push_back(it->second);
    } else {
      return ctx.error("output letter '" + std::string(1, out_term[k]) + "' is not in any operand");
    }
  }
  ctx.set_output(0, dtype, out);
  return Status();
}

// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss: the loss is a scalar
// unless reduction is "none" (then the target's shape); SCE's optional
// log_prob output has the scores' shape.
Status loss(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  if (ctx.attr_string("reduction", "mean") == "none") ctx.set_output(0, {dtype, ctx.rank(1), ctx.dims(1)});
  else ctx.set_output(0, dtype, {});
  if (ctx.output_count() > 1) same_as_input(ctx, 1, 0);
  return Status();
}

}  // namespace

void add_reduce_rules(RuleTable& table) {
  table["Einsum"] = einsum;
  table["NegativeLogLikelihoodLoss"] = loss;
  table["SoftmaxCrossEntropyLoss"] = loss;
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                         "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    table[op] = reduce;
  table["ArgMax"] = arg_reduce;
  table["ArgMin"] = arg_reduce;
  table["TopK"] = top_k;
}

}  // namespace onyx::runtime::ir::shape
