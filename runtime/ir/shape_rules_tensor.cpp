// shape_rules_tensor.cpp: ops that rearrange, select or create tensors.
// Several need an input's value (Reshape's shape, Slice's starts...): they
// use it when it is constant (an initializer or folded by constant_folding).
#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "ir/shape_rules.h"

namespace onyx::runtime::ir::shape {

namespace {

// Normalizes a list of axes against `rank`, refusing duplicates.
StatusOr<std::vector<int64_t>> normalize_axes(InferContext& ctx, std::vector<int64_t> axes, int64_t rank) {
  std::set<int64_t> seen;
  for (int64_t& a : axes) {
    ONYX_ASSIGN_OR_RETURN(a, ctx.axis(a, rank));
    if (!seen.insert(a).second) return ctx.error("axis " + std::to_string(a) + " is listed twice");
  }
  return axes;
}

Status reshape(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  std::optional<std::vector<int64_t>> target =
      ctx.opset() < 5 ? ctx.attr_ints("shape") : ctx.ints(1);
  if (!target) {  // shape computed at run time: only its length may be known
    if (ctx.rank(1) == 1 && ctx.dims(1)[0] >= 0) ctx.set_output_rank(0, dtype, int32_t(ctx.dims(1)[0]));
    else ctx.set_output_dtype(0, dtype);
    return Status();
  }
  const bool allowzero = ctx.attr_int("allowzero", 0) != 0;
  const Shape& in = ctx.dims(0);
  Shape out = *target;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer_at >= 0) return ctx.error("shape " + list_string(*target) + " has more than one -1");
      infer_at = int(i);
    } else if (out[i] < -1) {
      return ctx.error("shape " + list_string(*target) + " has an invalid dim " + std::to_string(out[i]));
    } else if (out[i] == 0 && !allowzero) {  // 0 copies the input's dim
      if (ctx.rank(0) >= 0 && i >= in.size())
        return ctx.error("shape " + list_string(*target) + " copies dim " + std::to_string(i) +
                         " of input " + shape_string(in) + ", which has no such dim");
      out[i] = ctx.rank(0) >= 0 ? in[i] : kUnknown;
    }
  }
  const int64_t total = ctx.rank(0) >= 0 ? dim_product(in) : kUnknown;
  int64_t rest = 1;  // product of the output dims other than the -1
  for (size_t i = 0; i < out.size(); ++i) {
    if (int(i) == infer_at) continue;
    if (out[i] < 0 || rest < 0) {
      rest = kUnknown;
      continue;
    }
    const int64_t factors[] = {rest, out[i]};
    ONYX_ASSIGN_OR_RETURN(rest, ctx.product(factors, "shape " + list_string(*target) + ": its dims"));
  }
  if (infer_at >= 0) {
    out[size_t(infer_at)] = kUnknown;
    if (total >= 0 && rest > 0) {
      if (total % rest != 0)
        return ctx.error("cannot reshape " + shape_string(in) + " (" + std::to_string(total) +
                         " elements) to " + list_string(*target));
      out[size_t(infer_at)] = total / rest;
    }
  } else if (total >= 0 && rest >= 0 && total != rest) {
    return ctx.error("cannot reshape " + shape_string(in) + " (" + std::to_string(total) +
                     " elements) to " + list_string(*target) + " (" + std::to_string(rest) + ")");
  }
  ctx.set_output(0, dtype, out);
  return Status();
}

Status flatten(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  if (ctx.rank(0) < 0) return ctx.set_output_rank(0, dtype, 2), Status();
  const int64_t rank = ctx.rank(0);
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const Shape& d = ctx.dims(0);
  ctx.set_output(0, dtype, {dim_product(std::span(d).first(size_t(axis))),
                            dim_product(std::span(d).subspan(size_t(axis)))});
  return Status();
}

Status transpose(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  auto perm = ctx.attr_ints("perm");
  int64_t rank = ctx.rank(0);
  if (rank < 0 && perm) rank = int64_t(perm->size());
  if (rank < 0) return ctx.set_output_dtype(0, dtype), Status();
  if (!perm) {  // default: reverse the axes
    perm.emplace();
    for (int64_t k = rank - 1; k >= 0; --k) perm->push_back(k);
  }
  if (int64_t(perm->size()) != rank)
    return ctx.error("perm " + list_string(*perm) + " does not match rank " + std::to_string(rank));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> p, normalize_axes(ctx, *perm, rank));
  Shape out;
  for (int64_t a : p) out.push_back(ctx.rank(0) >= 0 ? ctx.dims(0)[size_t(a)] : kUnknown);
  ctx.set_output(0, dtype, out);
  return Status();
}

}  // namespace

Status concat_shape(InferContext& ctx, size_t first, size_t step, int64_t axis_attr, int32_t dtype) {
  int32_t rank = -1;
  for (size_t i = first; i < ctx.input_count(); i += step) {
    if (ctx.rank(i) < 0) continue;
    if (rank >= 0 && ctx.rank(i) != rank)
      return ctx.error("input " + std::to_string(i) + " has rank " + std::to_string(ctx.rank(i)) + ", input " +
                       std::to_string(first) + " has rank " + std::to_string(rank));
    rank = ctx.rank(i);
  }
  if (rank < 0) return ctx.set_output_dtype(0, dtype), Status();
  ONYX_ASSIGN_OR_RETURN(int64_t axis, ctx.axis(axis_attr, rank));
  Shape out(size_t(rank), kUnknown);
  int64_t total = 0;
  for (size_t i = first; i < ctx.input_count(); i += step) {
    if (ctx.rank(i) < 0) {
      total = kUnknown;
      continue;
    }
    const Shape& d = ctx.dims(i);
    for (size_t k = 0; k < d.size(); ++k) {
      if (int64_t(k) == axis || d[k] < 0) continue;
      if (out[k] >= 0 && out[k] != d[k])
        return ctx.error("input " + std::to_string(i) + " " + shape_string(d) + " differs from the others in dim " +
                         std::to_string(k));
      out[k] = d[k];
    }
    if (total < 0 || d[size_t(axis)] < 0) {
      total = kUnknown;
    } else {
      const int64_t terms[] = {total, d[size_t(axis)]};
      ONYX_ASSIGN_OR_RETURN(total, ctx.sum(terms, "the inputs' sizes along axis " + std::to_string(axis)));
    }
  }
  out[size_t(axis)] = total;
  ctx.set_output(0, dtype, out);
  return Status();
}

namespace {

Status concat(InferContext& ctx) {
  return concat_shape(ctx, 0, 1, ctx.attr_int("axis", ctx.opset() < 4 ? 1 : 0), ctx.dtype(0));
}

Status split(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  const size_t n = ctx.output_count();
  if (n == 0) return ctx.error("Split has no outputs");  // ONNX requires one at least; sizes would divide by 0
  if (ctx.rank(0) < 0) {
    for (size_t k = 0; k < n; ++k) ctx.set_output_dtype(k, dtype);
    return Status();
  }
  ONYX_ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.attr_int("axis", 0), ctx.rank(0)));
  const int64_t d = ctx.dims(0)[size_t(axis)];
  std::optional<std::vector<int64_t>> sizes = ctx.opset() < 13 ? ctx.attr_ints("split") : ctx.ints(1);
  const bool split_given = ctx.opset() < 13 ? sizes.has_value() : ctx.has_input(1);
  if (split_given && !sizes) {  // split sizes computed at run time
    for (size_t k = 0; k < n; ++k) {
      Shape out = ctx.dims(0);
      out[size_t(axis)] = kUnknown;
      ctx.set_output(k, dtype, out);
    }
    return Status();
  }
  if (sizes) {
    if (sizes->size() != n)
      return ctx.error("split " + list_string(*sizes) + " has " + std::to_string(sizes->size()) +
                       " entries for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *sizes) {
      if (s < 0) return ctx.error("split " + list_string(*sizes) + " has a negative size");
      const int64_t terms[] = {sum, s};
      ONYX_ASSIGN_OR_RETURN(sum, ctx.sum(terms, "split"));
    }
    if (d >= 0 && sum != d)
      return ctx.error("split " + list_string(*sizes) + " sums to " + std::to_string(sum) +
                       " but axis " + std::to_string(axis) + " has " + std::to_string(d));
  } else if (d >= 0) {
    // Opset 18's num_outputs: chunks of ceil(d / n), the last one smaller.
    // Before, an equal split that must divide evenly.
    const int64_t parts = ctx.attr_int("num_outputs", int64_t(n));
    if (parts != int64_t(n))
      return ctx.error("num_outputs is " + std::to_string(parts) + " but the node has " +
                       std::to_string(n) + " outputs");
    if (ctx.attr("num_outputs")) {
      const int64_t chunk = (d + parts - 1) / parts;
      sizes.emplace();
      for (int64_t k = 0; k < parts; ++k) sizes->push_back(std::clamp<int64_t>(d - k * chunk, 0, chunk));
    } else {
      if (d % parts != 0)
        return ctx.error("axis " + std::to_string(axis) + " of size " + std::to_string(d) +
                         " does not split evenly into " + std::to_string(parts) + " outputs");
      sizes.emplace(size_t(parts), d / parts);
    }
  }
  for (size_t k = 0; k < n; ++k) {
    Shape out = ctx.dims(0);
    out[size_t(axis)] = sizes ? (*sizes)[k] : kUnknown;
    ctx.set_output(k, dtype, out);
  }
  return Status();
}

// Elements a slice keeps of an axis of size `dim` (ONNX clamping rules).
int64_t slice_length(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return start > end ? (start - end - step - 1) / -step : 0;
}

Status slice(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  const int32_t rank = ctx.rank(0);
  if (rank < 0) return ctx.set_output_dtype(0, dtype), Status();
  const bool attrs = ctx.opset() < 10;
  auto starts = attrs ? ctx.attr_ints("starts") : ctx.ints(1);
  auto ends = attrs ? ctx.attr_ints("ends") : ctx.ints(2);
  auto axes = attrs ? ctx.attr_ints("axes") : ctx.ints(3);
  auto steps = attrs ? std::nullopt : ctx.ints(4);
  const bool axes_dynamic = !attrs && ctx.has_input(3) && !axes;
  const bool steps_dynamic = !attrs && ctx.has_input(4) && !steps;
  Shape out = ctx.dims(0);
  if (!starts || !ends || axes_dynamic || steps_dynamic) {
    if (axes_dynamic || !axes) std::fill(out.begin(), out.end(), kUnknown);
    else for (int64_t a : *axes) if (a >= -rank && a < rank) out[size_t(a < 0 ? a + rank : a)] = kUnknown;
    ctx.set_output(0, dtype, out);
    return Status();
  }
  if (starts->size() != ends->size())
    return ctx.error("starts has " + std::to_string(starts->size()) + " entries, ends " +
                     std::to_string(ends->size()));
  if (!axes) {
    axes.emplace();
    for (size_t k = 0; k < starts->size(); ++k) axes->push_back(int64_t(k));
  }
  if (!steps) steps.emplace(starts->size(), 1);
  if (axes->size() != starts->size() || steps->size() != starts->size())
    return ctx.error("starts, ends, axes and steps must have the same length");
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> ax, normalize_axes(ctx, *axes, rank));
  for (size_t k = 0; k < ax.size(); ++k) {
    if ((*steps)[k] == 0) return ctx.error("steps must not be 0");
    int64_t& d = out[size_t(ax[k])];
    if (d >= 0) d = slice_length(d, (*starts)[k], (*ends)[k], (*steps)[k]);
  }
  ctx.set_output(0, dtype, out);
  return Status();
}

Status gather(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  if (ctx.rank(0) < 0 || ctx.rank(1) < 0) return ctx.set_output_dtype(0, dtype), Status();
  if (ctx.rank(0) == 0) return ctx.error("data must have rank >= 1");
  ONYX_ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.attr_int("axis", 0), ctx.rank(0)));
  const Shape& data = ctx.dims(0);
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), ctx.dims(1).begin(), ctx.dims(1).end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  ctx.set_output(0, dtype, out);
  return Status();
}

Status gather_elements(InferContext& ctx) {
  ctx.set_output(0, {ctx.dtype(0), ctx.rank(1), ctx.dims(1)});
  return Status();
}

Status squeeze(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  auto axes = ctx.opset() < 13 ? ctx.attr_ints("axes") : ctx.ints(1);
  if (ctx.opset() >= 13 && ctx.has_input(1) && !axes) return ctx.set_output_dtype(0, dtype), Status();
  if (ctx.rank(0) < 0) return ctx.set_output_dtype(0, dtype), Status();
  const Shape& in = ctx.dims(0);
  Shape out;
  if (!axes || axes->empty()) {  // drop every 1; unknown dims leave the rank unknown
    if (std::any_of(in.begin(), in.end(), [](int64_t d) { return d < 0; }))
      return ctx.set_output_dtype(0, dtype), Status();
    for (int64_t d : in)
      if (d != 1) out.push_back(d);
  } else {
    ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> ax, normalize_axes(ctx, *axes, ctx.rank(0)));
    for (int64_t a : ax)
      if (in[size_t(a)] >= 0 && in[size_t(a)] != 1)
        return ctx.error("cannot squeeze axis " + std::to_string(a) + " of " + shape_string(in) +
                         ": its size is not 1");
    for (size_t k = 0; k < in.size(); ++k)
      if (std::find(ax.begin(), ax.end(), int64_t(k)) == ax.end()) out.push_back(in[k]);
  }
  ctx.set_output(0, dtype, out);
  return Status();
}

Status unsqueeze(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  auto axes = ctx.opset() < 13 ? ctx.attr_ints("axes") : ctx.ints(1);
  if (!axes || ctx.rank(0) < 0) {
    if (axes) ctx.set_output_dtype(0, dtype);
    else if (ctx.rank(0) >= 0 && ctx.rank(1) == 1 && ctx.dims(1)[0] >= 0)
      ctx.set_output_rank(0, dtype, ctx.rank(0) + int32_t(ctx.dims(1)[0]));
    else ctx.set_output_dtype(0, dtype);
    return Status();
  }
  const int64_t rank = ctx.rank(0) + int64_t(axes->size());
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> ax, normalize_axes(ctx, *axes, rank));
  Shape out;
  auto in = ctx.dims(0).begin();
  for (int64_t k = 0; k < rank; ++k)
    out.push_back(std::find(ax.begin(), ax.end(), k) != ax.end() ? 1 : *in++);
  ctx.set_output(0, dtype, out);
  return Status();
}

Status shape_op(InferContext& ctx) {
  const int64_t rank = ctx.rank(0);
  if (rank < 0) return ctx.set_output(0, ONYX_DTYPE_INT64, {kUnknown}), Status();
  // start/end (opset 15): negative counts from the back, then clamped.
  auto clamp_end = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp_end(ctx.attr_int("start", 0));
  const int64_t end = clamp_end(ctx.attr_int("end", rank));
  ctx.set_output(0, ONYX_DTYPE_INT64, {std::max<int64_t>(end - start, 0)});
  return Status();
}

Status size_op(InferContext& ctx) {
  ctx.set_output(0, ONYX_DTYPE_INT64, {});
  return Status();
}

Status constant(InferContext& ctx) {
  const Node& node = ctx.node();
  if (node.attributes.size() != 1)
    return ctx.error("needs exactly one value attribute, has " + std::to_string(node.attributes.size()));
  const Attribute& a = node.attributes[0];
  if (a.name == "value" || a.name == "sparse_value") {
    if (a.type != ONYX_ATTR_TENSOR) return ctx.error("attribute '" + a.name + "' must be a tensor");
    ctx.set_output(0, a.t.dtype(), a.t.shape());
  } else if (a.name == "value_float") {
    ctx.set_output(0, ONYX_DTYPE_FLOAT32, {});
  } else if (a.name == "value_floats") {
    ctx.set_output(0, ONYX_DTYPE_FLOAT32, {int64_t(a.floats.size())});
  } else if (a.name == "value_int") {
    ctx.set_output(0, ONYX_DTYPE_INT64, {});
  } else if (a.name == "value_ints") {
    ctx.set_output(0, ONYX_DTYPE_INT64, {int64_t(a.ints.size())});
  } else if (a.name == "value_string") {
    ctx.set_output(0, ONYX_DTYPE_STRING, {});
  } else if (a.name == "value_strings") {
    ctx.set_output(0, ONYX_DTYPE_STRING, {int64_t(a.strings.size())});
  } else {
    return ctx.error("unknown attribute '" + a.name + "'");
  }
  return Status();
}

Status expand(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  auto target = ctx.ints(1);
  if (!target) {
    if (ctx.rank(0) >= 0 && ctx.rank(1) == 1 && ctx.dims(1)[0] >= 0)
      ctx.set_output_rank(0, dtype, std::max<int32_t>(ctx.rank(0), int32_t(ctx.dims(1)[0])));
    else ctx.set_output_dtype(0, dtype);
    return Status();
  }
  const TypeShape both[] = {ctx.input_type(0), {dtype, int32_t(target->size()), *target}};
  ONYX_ASSIGN_OR_RETURN(TypeShape out, broadcast(ctx, both));
  out.dtype = dtype;
  ctx.set_output(0, out);
  return Status();
}

Status tile(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  if (ctx.rank(0) < 0) return ctx.set_output_dtype(0, dtype), Status();
  auto repeats = ctx.ints(1);
  Shape out = ctx.dims(0);
  if (!repeats) {
    std::fill(out.begin(), out.end(), kUnknown);
  } else {
    if (repeats->size() != out.size())
      return ctx.error("repeats " + list_string(*repeats) + " does not match rank " + std::to_string(out.size()));
    for (size_t k = 0; k < out.size(); ++k) {
      if ((*repeats)[k] < 0) return ctx.error("repeats must not be negative");
      if (out[k] < 0) continue;
      const int64_t factors[] = {out[k], (*repeats)[k]};
      ONYX_ASSIGN_OR_RETURN(out[k], ctx.product(factors, "dim " + std::to_string(k) + " and its repeats"));
    }
  }
  ctx.set_output(0, dtype, out);
  return Status();
}

Status range(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  auto start = ctx.reals(0), limit = ctx.reals(1), delta = ctx.reals(2);
  if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 || delta->size() != 1) {
    ctx.set_output(0, dtype, {kUnknown});
    return Status();
  }
  if ((*delta)[0] == 0) return ctx.error("delta must not be 0");
  const double n = std::ceil(((*limit)[0] - (*start)[0]) / (*delta)[0]);
  ONYX_ASSIGN_OR_RETURN(int64_t count, ctx.dim_from_real(n > 0 ? n : 0, "the element count"));
  ctx.set_output(0, dtype, {count});
  return Status();
}

Status constant_of_shape(InferContext& ctx) {
  const Attribute* value = ctx.attr("value");
  const int32_t dtype = value && value->type == ONYX_ATTR_TENSOR ? value->t.dtype() : ONYX_DTYPE_FLOAT32;
  if (auto shape = ctx.ints(0)) {
    for (int64_t d : *shape)
      if (d < 0) return ctx.error("shape " + list_string(*shape) + " has a negative dim");
    ctx.set_output(0, dtype, *shape);
  } else if (ctx.rank(0) == 1 && ctx.dims(0)[0] >= 0) {
    ctx.set_output_rank(0, dtype, int32_t(ctx.dims(0)[0]));
  } else {
    ctx.set_output_dtype(0, dtype);
  }
  return Status();
}

Status pad(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  const int64_t rank = ctx.rank(0);
  if (rank < 0) return ctx.set_output_dtype(0, dtype), Status();
  // pads: attribute "paddings" (opset 1), "pads" (2-10), input 1 (11+), with axes input 3 (18+).
  auto pads = ctx.opset() < 2 ? ctx.attr_ints("paddings") : ctx.opset() < 11 ? ctx.attr_ints("pads") : ctx.ints(1);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset() >= 18 && ctx.has_input(3)) {
    axes = ctx.ints(3);
    if (!axes) return ctx.set_output_rank(0, dtype, int32_t(rank)), Status();
  }
  if (!pads) return ctx.set_output_rank(0, dtype, int32_t(rank)), Status();
  if (!axes) {
    axes.emplace();
    for (int64_t k = 0; k < rank; ++k) axes->push_back(k);
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> ax, normalize_axes(ctx, *axes, rank));
  if (pads->size() != 2 * ax.size())
    return ctx.error("pads " + list_string(*pads) + " needs " + std::to_string(2 * ax.size()) + " entries");
  Shape out = ctx.dims(0);
  for (size_t k = 0; k < ax.size(); ++k) {
    int64_t& d = out[size_t(ax[k])];
    if (d < 0) continue;
    const int64_t terms[] = {d, (*pads)[k], (*pads)[k + ax.size()]};
    ONYX_ASSIGN_OR_RETURN(d, ctx.sum(terms, "axis " + std::to_string(ax[k]) + " and its pads"));
    if (d < 0) return ctx.error("pads " + list_string(*pads) + " remove more than axis " +
                                std::to_string(ax[k]) + " holds");
  }
  ctx.set_output(0, dtype, out);
  return Status();
}

Status one_hot(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(2);
  if (ctx.rank(0) < 0) return ctx.set_output_dtype(0, dtype), Status();
  const int64_t rank = ctx.rank(0) + 1;
  ONYX_ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.attr_int("axis", -1), rank));
  auto depth = ctx.reals(1);
  Shape out = ctx.dims(0);
  int64_t classes = kUnknown;
  if (depth && depth->size() == 1) {
    ONYX_ASSIGN_OR_RETURN(classes, ctx.dim_from_real((*depth)[0], "depth"));
  }
  out.insert(out.begin() + axis, classes);
  ctx.set_output(0, dtype, out);
  return Status();
}

Status non_zero(InferContext& ctx) {
  ctx.set_output(0, ONYX_DTYPE_INT64, {ctx.rank(0) >= 0 ? ctx.rank(0) : kUnknown, kUnknown});
  return Status();
}

Status eye_like(InferContext& ctx) {
  const int32_t dtype = int32_t(ctx.attr_int("dtype", ctx.dtype(0)));
  ctx.set_output(0, {dtype, ctx.rank(0), ctx.dims(0)});
  return Status();
}

// Resize (opset 10: X, scales; 11+: X, roi, scales, sizes; 18+: axes) and
// Upsample (scales attribute, then input 1).
Status resize(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  const int64_t rank = ctx.rank(0);
  if (rank < 0) return ctx.set_output_dtype(0, dtype), Status();
  const bool upsample = ctx.node().op_type == "Upsample";
  std::optional<std::vector<double>> scales, sizes;
  if (upsample && ctx.opset() < 9) {
    if (const Attribute* a = ctx.attr("scales"); a && a->type == ONYX_ATTR_FLOATS)
      scales.emplace(a->floats.begin(), a->floats.end());
  } else {
    scales = ctx.reals(upsample || ctx.opset() < 11 ? 1 : 2);
    if (!upsample && ctx.opset() >= 11) sizes = ctx.reals(3);
  }
  if (scales && scales->empty()) scales.reset();
  if (sizes && sizes->empty()) sizes.reset();
  std::vector<int64_t> axes;
  if (auto a = ctx.attr_ints("axes")) {
    ONYX_ASSIGN_OR_RETURN(axes, normalize_axes(ctx, *a, rank));
  } else {
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  Shape out = ctx.dims(0);
  const std::vector<double>* given = sizes ? &*sizes : scales ? &*scales : nullptr;
  if (!given) {  // computed at run time
    for (int64_t a : axes) out[size_t(a)] = kUnknown;
    ctx.set_output(0, dtype, out);
    return Status();
  }
  if (given->size() != axes.size())
    return ctx.error(std::string(sizes ? "sizes" : "scales") + " has " + std::to_string(given->size()) +
                     " entries for " + std::to_string(axes.size()) + " axes");
  const std::string policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
  if (sizes && policy != "stretch") {
    // One scale for all axes: the smallest (not_larger) or largest
    // (not_smaller) of sizes / input, then sizes round half up.
    double scale = policy == "not_larger" ? 1e300 : 0;
    for (size_t k = 0; k < axes.size(); ++k) {
      const int64_t d = out[size_t(axes[k])];
      if (d <= 0) return ctx.set_output_rank(0, dtype, int32_t(rank)), Status();
      const double s = (*sizes)[k] / double(d);
      scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
    }
    for (int64_t a : axes) {
      ONYX_ASSIGN_OR_RETURN(out[size_t(a)], ctx.dim_from_real(scale * double(out[size_t(a)]) + 0.5, "a resized size"));
    }
  } else {
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t& d = out[size_t(axes[k])];
      if (sizes) {
        ONYX_ASSIGN_OR_RETURN(d, ctx.dim_from_real((*given)[k], "sizes entry"));
      } else if (d >= 0) {  // numpy: (scales * shape).astype(int)
        ONYX_ASSIGN_OR_RETURN(d, ctx.dim_from_real(std::floor(double(d) * (*given)[k]), "a scaled size"));
      }
    }
  }
  ctx.set_output(0, dtype, out);
  return Status();
}

}  // namespace

void add_tensor_rules(RuleTable& table) {
  table["Reshape"] = reshape;
  table["Flatten"] = flatten;
  table["Transpose"] = transpose;
  table["Concat"] = concat;
  table["Split"] = split;
  table["Slice"] = slice;
  table["Gather"] = gather;
  table["GatherElements"] = gather_elements;
  table["Squeeze"] = squeeze;
  table["Unsqueeze"] = unsqueeze;
  table["Shape"] = shape_op;
  table["Size"] = size_op;
  table["Constant"] = constant;
  table["Expand"] = expand;
  table["Tile"] = tile;
  table["Range"] = range;
  table["ConstantOfShape"] = constant_of_shape;
  table["Pad"] = pad;
  table["OneHot"] = one_hot;
  table["NonZero"] = non_zero;
  table["EyeLike"] = eye_like;
  table["Resize"] = resize;
  table["Upsample"] = resize;
}

}  // namespace onyx::runtime::ir::shape
