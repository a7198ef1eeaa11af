// constant_folding.cpp: evaluates small "shape arithmetic" while inferring
// shapes (Shape -> Gather -> Concat -> Reshape and the like), so that ops
// reading a shape input (Reshape, Expand, Tile, ...) see concrete values.
// Only cheap ops on small numeric tensors; the nodes themselves stay in the
// graph and still run.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "ir/shape_rules.h"

namespace onyx::runtime::ir::shape {

namespace {

// Larger results are left to the kernels: folding is for shape math.
constexpr int64_t kMaxFoldElements = 4096;

// A small numeric tensor, integers (and bool) as int64, floats as double.
struct Num {
  int32_t dtype = ONYX_DTYPE_UNDEFINED;
  Shape dims;
  std::vector<int64_t> i;
  std::vector<double> f;
  bool real() const { return dtype == ONYX_DTYPE_FLOAT32 || dtype == ONYX_DTYPE_FLOAT64; }
  int64_t size() const { return checked_element_count(dims).value_or(-1); }  // -1: overflows
};

bool foldable_dtype(int32_t t) {
  switch (t) {
    case ONYX_DTYPE_FLOAT32: case ONYX_DTYPE_FLOAT64: case ONYX_DTYPE_INT64: case ONYX_DTYPE_INT32:
    case ONYX_DTYPE_INT16: case ONYX_DTYPE_INT8: case ONYX_DTYPE_UINT8: case ONYX_DTYPE_UINT16:
    case ONYX_DTYPE_UINT32: case ONYX_DTYPE_UINT64: case ONYX_DTYPE_BOOL: return true;
    default: return false;
  }
}

template <typename T>
void read_as(const Tensor& t, Num& n) {
  const T* p = t.data_as<T>();
  if constexpr (std::is_floating_point_v<T>) n.f.assign(p, p + t.size());
  else n.i.assign(p, p + t.size());
}

std::optional<Num> read(const Tensor* t) {
  if (!t || !foldable_dtype(t->dtype()) || t->size() > kMaxFoldElements) return std::nullopt;
  Num n;
  n.dtype = t->dtype();
  n.dims = t->shape();
  switch (t->dtype()) {
    case ONYX_DTYPE_FLOAT32: read_as<float>(*t, n); break;
    case ONYX_DTYPE_FLOAT64: read_as<double>(*t, n); break;
    case ONYX_DTYPE_INT64: read_as<int64_t>(*t, n); break;
    case ONYX_DTYPE_INT32: read_as<int32_t>(*t, n); break;
    case ONYX_DTYPE_INT16: read_as<int16_t>(*t, n); break;
    case ONYX_DTYPE_INT8: read_as<int8_t>(*t, n); break;
    case ONYX_DTYPE_UINT8: case ONYX_DTYPE_BOOL: read_as<uint8_t>(*t, n); break;
    case ONYX_DTYPE_UINT16: read_as<uint16_t>(*t, n); break;
    case ONYX_DTYPE_UINT32: read_as<uint32_t>(*t, n); break;
    case ONYX_DTYPE_UINT64: read_as<uint64_t>(*t, n); break;
  }
  return n;
}

template <typename T, typename Src>
void write_as(const std::vector<Src>& src, Tensor& t) {
  T* p = t.data_as<T>();
  for (size_t k = 0; k < src.size(); ++k) p[k] = static_cast<T>(src[k]);
}

// Converts `n`'s values to `dtype` (a Cast) and stores them in a Tensor.
std::optional<Tensor> write(const Num& n, int32_t dtype) {
  if (!foldable_dtype(dtype) || n.size() < 0 || n.size() > kMaxFoldElements) return std::nullopt;
  if (int64_t(n.real() ? n.f.size() : n.i.size()) != n.size()) return std::nullopt;  // never overrun
  Tensor t = Tensor::allocate(dtype, n.dims);
  const bool to_real = dtype == ONYX_DTYPE_FLOAT32 || dtype == ONYX_DTYPE_FLOAT64;
  if (n.real() && !to_real) {  // float -> integer truncates; NaN/inf have no value to fold
    std::vector<int64_t> ints;
    for (double v : n.f) {
      if (!std::isfinite(v) || std::fabs(v) > 9e18) return std::nullopt;
      ints.push_back(dtype == ONYX_DTYPE_BOOL ? v != 0 : int64_t(v));
    }
    Num copy = n;
    copy.dtype = ONYX_DTYPE_INT64, copy.i = std::move(ints), copy.f.clear();
    return write(copy, dtype);
  }
  auto store = [&](const auto& src) {
    switch (dtype) {
      case ONYX_DTYPE_FLOAT32: write_as<float>(src, t); break;
      case ONYX_DTYPE_FLOAT64: write_as<double>(src, t); break;
      case ONYX_DTYPE_INT64: write_as<int64_t>(src, t); break;
      case ONYX_DTYPE_INT32: write_as<int32_t>(src, t); break;
      case ONYX_DTYPE_INT16: write_as<int16_t>(src, t); break;
      case ONYX_DTYPE_INT8: write_as<int8_t>(src, t); break;
      case ONYX_DTYPE_UINT8: write_as<uint8_t>(src, t); break;
      case ONYX_DTYPE_UINT16: write_as<uint16_t>(src, t); break;
      case ONYX_DTYPE_UINT32: write_as<uint32_t>(src, t); break;
      case ONYX_DTYPE_UINT64: write_as<uint64_t>(src, t); break;
      case ONYX_DTYPE_BOOL: {
        uint8_t* p = t.data_as<uint8_t>();
        for (size_t k = 0; k < src.size(); ++k) p[k] = src[k] != 0;
        break;
      }
    }
  };
  if (n.real()) store(n.f);
  else store(n.i);
  return t;
}

// Row-major strides of `dims`.
Shape strides_of(const Shape& dims) {
  Shape s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

// For each element of `out` (row-major), the offset of the element of an
// input of shape `in` that broadcasting maps to it.
std::vector<int64_t> broadcast_offsets(const Shape& out, const Shape& in) {
  const Shape in_strides = strides_of(in);
  const size_t shift = out.size() - in.size();
  std::vector<int64_t> offsets(size_t(element_count(out)));
  Shape index(out.size(), 0);
  for (int64_t e = 0; e < int64_t(offsets.size()); ++e) {
    int64_t off = 0;
    for (size_t k = 0; k < in.size(); ++k)
      if (in[k] != 1) off += index[k + shift] * in_strides[k];
    offsets[size_t(e)] = off;
    for (size_t k = out.size(); k-- > 0;) {  // next index
      if (++index[k] < out[k]) break;
      index[k] = 0;
    }
  }
  return offsets;
}

// Element-wise op over broadcast inputs; `f` sees the k-th element of each
// input as a double (when `real`) or int64 and returns the result, or
// nullopt when it cannot be folded (division by zero).
using IntFn = std::function<std::optional<int64_t>(const std::vector<int64_t>&)>;
using RealFn = std::function<std::optional<double>(const std::vector<double>&)>;

std::optional<Num> elementwise(const std::vector<Num>& in, const Shape& out_dims, int32_t out_dtype,
                               const IntFn& on_int, const RealFn& on_real) {
  const bool real = in[0].real();
  for (const Num& n : in)
    if (n.real() != real && n.dtype != ONYX_DTYPE_BOOL) return std::nullopt;
  if ((real && !on_real) || (!real && !on_int)) return std::nullopt;
  Num out;
  out.dtype = out_dtype;
  out.dims = out_dims;
  std::vector<std::vector<int64_t>> offsets;
  for (const Num& n : in) offsets.push_back(broadcast_offsets(out_dims, n.dims));
  const bool real_out = out.real();
  for (int64_t e = 0; e < element_count(out_dims); ++e) {
    std::vector<int64_t> iargs;
    std::vector<double> rargs;
    for (size_t k = 0; k < in.size(); ++k) {
      int64_t o = offsets[k][size_t(e)];
      if (in[k].real()) rargs.push_back(in[k].f[size_t(o)]);
      else if (real) rargs.push_back(double(in[k].i[size_t(o)]));  // Where's bool condition
      else iargs.push_back(in[k].i[size_t(o)]);
    }
    if (real) {
      auto r = on_real(rargs);
      if (!r) return std::nullopt;
      if (real_out) out.f.push_back(*r);
      else out.i.push_back(int64_t(*r));
    } else {
      auto r = on_int(iargs);
      if (!r) return std::nullopt;
      out.i.push_back(*r);
    }
  }
  return out;
}

// Python-style modulo (sign of the divisor), ONNX Mod with fmod = 0.
int64_t floor_mod(int64_t a, int64_t b) {
  int64_t m = a % b;
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}

std::optional<Num> fold_binary(const std::string& op, const std::vector<Num>& in, const TypeShape& out,
                               bool fmod) {
  using I = std::vector<int64_t>;
  using R = std::vector<double>;
  // The element functions index their arguments: check the arity first.
  static const std::set<std::string> unary = {"Neg", "Abs", "Not", "Floor", "Ceil", "Sqrt"};
  const size_t arity = op == "Where" ? 3 : unary.count(op) ? 1 : 2;
  if (op == "Max" || op == "Min" ? in.empty() : in.size() != arity) return std::nullopt;
  IntFn fi;
  RealFn fr;
  // Integer results wrap as two's complement, as the kernels' do (numpy
  // too): signed overflow is undefined in C++, and INT64_MIN / -1 traps.
  auto wrap = [](uint64_t v) { return int64_t(v); };
  if (op == "Add") fi = [wrap](const I& a) { return wrap(uint64_t(a[0]) + uint64_t(a[1])); }, fr = [](const R& a) { return a[0] + a[1]; };
  else if (op == "Sub") fi = [wrap](const I& a) { return wrap(uint64_t(a[0]) - uint64_t(a[1])); }, fr = [](const R& a) { return a[0] - a[1]; };
  else if (op == "Mul") fi = [wrap](const I& a) { return wrap(uint64_t(a[0]) * uint64_t(a[1])); }, fr = [](const R& a) { return a[0] * a[1]; };
  else if (op == "Div") {
    // Integer division truncates toward zero (ONNX reference: numpy then astype).
    fi = [wrap](const I& a) -> std::optional<int64_t> {
      if (a[1] == 0) return std::nullopt;
      return a[1] == -1 ? wrap(0 - uint64_t(a[0])) : a[0] / a[1];
    };
    fr = [](const R& a) { return a[0] / a[1]; };
  } else if (op == "Mod") {
    fi = [fmod](const I& a) -> std::optional<int64_t> {
      if (a[1] == 0) return std::nullopt;
      if (a[1] == -1) return 0;  // x % -1 is 0 in either convention (and INT64_MIN % -1 traps)
      return fmod ? a[0] % a[1] : floor_mod(a[0], a[1]);
    };
    if (fmod) fr = [](const R& a) { return std::fmod(a[0], a[1]); };
  } else if (op == "Max" || op == "Min") {
    const bool max = op == "Max";
    fi = [max](const I& a) { int64_t r = a[0]; for (int64_t v : a) r = max ? std::max(r, v) : std::min(r, v); return r; };
    fr = [max](const R& a) { double r = a[0]; for (double v : a) r = max ? std::max(r, v) : std::min(r, v); return r; };
  } else if (op == "Equal") {
    fi = [](const I& a) -> int64_t { return a[0] == a[1]; }, fr = [](const R& a) -> double { return a[0] == a[1]; };
  } else if (op == "Less") {
    fi = [](const I& a) -> int64_t { return a[0] < a[1]; }, fr = [](const R& a) -> double { return a[0] < a[1]; };
  } else if (op == "Greater") {
    fi = [](const I& a) -> int64_t { return a[0] > a[1]; }, fr = [](const R& a) -> double { return a[0] > a[1]; };
  } else if (op == "LessOrEqual") {
    fi = [](const I& a) -> int64_t { return a[0] <= a[1]; }, fr = [](const R& a) -> double { return a[0] <= a[1]; };
  } else if (op == "GreaterOrEqual") {
    fi = [](const I& a) -> int64_t { return a[0] >= a[1]; }, fr = [](const R& a) -> double { return a[0] >= a[1]; };
  } else if (op == "And") {
    fi = [](const I& a) -> int64_t { return a[0] && a[1]; };
  } else if (op == "Or") {
    fi = [](const I& a) -> int64_t { return a[0] || a[1]; };
  } else if (op == "Where") {
    fi = [](const I& a) { return a[0] ? a[1] : a[2]; }, fr = [](const R& a) { return a[0] != 0 ? a[1] : a[2]; };
  } else if (op == "Neg") {
    fi = [](const I& a) { return -a[0]; }, fr = [](const R& a) { return -a[0]; };
  } else if (op == "Abs") {
    fi = [](const I& a) { return a[0] < 0 ? -a[0] : a[0]; }, fr = [](const R& a) { return std::fabs(a[0]); };
  } else if (op == "Not") {
    fi = [](const I& a) -> int64_t { return !a[0]; };
  } else if (op == "Floor") {
    fr = [](const R& a) { return std::floor(a[0]); };
  } else if (op == "Ceil") {
    fr = [](const R& a) { return std::ceil(a[0]); };
  } else if (op == "Sqrt") {
    fr = [](const R& a) { return std::sqrt(a[0]); };
  } else {
    return std::nullopt;
  }
  std::vector<Num> args = in;
  if (op == "Where") {  // the condition is bool: compare as a number in either domain
    if (args[1].real()) {
      args[0].f.assign(args[0].i.begin(), args[0].i.end());
      args[0].dtype = ONYX_DTYPE_FLOAT64;
    }
  } else {
    for (const Num& n : args)
      if (n.dtype != args[0].dtype) return std::nullopt;  // mixed types: not a valid model
  }
  if (out.dtype == ONYX_DTYPE_FLOAT32) {  // results round to float32 like the kernel's
    auto inner = fr;
    if (inner) fr = [inner](const R& a) -> std::optional<double> { auto r = inner(a); if (!r) return r; return double(float(*r)); };
  }
  return elementwise(args, out.dims, out.dtype, fi, fr);
}

// Copies elements of `data` picked by per-axis (start, step) over `out_dims`.
Num strided_copy(const Num& data, const Shape& starts, const Shape& steps, const Shape& out_dims) {
  Num out;
  out.dtype = data.dtype;
  out.dims = out_dims;
  const Shape strides = strides_of(data.dims);
  Shape index(out_dims.size(), 0);
  for (int64_t e = 0; e < element_count(out_dims); ++e) {
    int64_t off = 0;
    for (size_t k = 0; k < index.size(); ++k) off += (starts[k] + index[k] * steps[k]) * strides[k];
    if (data.real()) out.f.push_back(data.f[size_t(off)]);
    else out.i.push_back(data.i[size_t(off)]);
    for (size_t k = index.size(); k-- > 0;) {
      if (++index[k] < out_dims[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

std::optional<Num> fold_slice(const InferContext& ctx, const Num& data, const TypeShape& out) {
  if (ctx.opset() < 10) return std::nullopt;
  auto starts = ctx.ints(1), ends = ctx.ints(2);
  if (!starts || !ends) return std::nullopt;
  auto axes = ctx.has_input(3) ? ctx.ints(3) : std::optional<std::vector<int64_t>>(std::vector<int64_t>());
  auto steps = ctx.has_input(4) ? ctx.ints(4) : std::optional<std::vector<int64_t>>(std::vector<int64_t>());
  if (!axes || !steps) return std::nullopt;
  const int64_t rank = int64_t(data.dims.size());
  Shape first(size_t(rank), 0), step(size_t(rank), 1);
  for (size_t k = 0; k < starts->size(); ++k) {
    int64_t a = axes->empty() ? int64_t(k) : (*axes)[k];
    if (a < 0) a += rank;
    const int64_t d = data.dims[size_t(a)];
    int64_t s = (*starts)[k], st = steps->empty() ? 1 : (*steps)[k];
    if (s < 0) s += d;
    s = st > 0 ? std::clamp<int64_t>(s, 0, d) : std::clamp<int64_t>(s, 0, d - 1);
    first[size_t(a)] = s, step[size_t(a)] = st;
  }
  return strided_copy(data, first, step, out.dims);
}

std::optional<Num> fold_transpose(const InferContext& ctx, const Num& data, const TypeShape& out) {
  const size_t rank = data.dims.size();
  std::vector<int64_t> perm = ctx.attr_ints("perm").value_or(std::vector<int64_t>());
  if (perm.empty())
    for (size_t k = rank; k-- > 0;) perm.push_back(int64_t(k));
  if (perm.size() != rank || out.dims.size() != rank) return std::nullopt;
  // Output axis k walks input axis perm[k].
  const Shape in_strides = strides_of(data.dims);
  Shape step(rank);
  for (size_t k = 0; k < rank; ++k) {
    if (perm[k] < 0 || perm[k] >= int64_t(rank)) return std::nullopt;
    step[k] = in_strides[size_t(perm[k])];
  }
  Num r;
  r.dtype = data.dtype;
  r.dims = out.dims;
  Shape index(rank, 0);
  for (int64_t e = 0, off = 0; e < element_count(out.dims); ++e) {
    if (data.real()) r.f.push_back(data.f[size_t(off)]);
    else r.i.push_back(data.i[size_t(off)]);
    for (size_t k = rank; k-- > 0;) {
      off += step[k];
      if (++index[k] < out.dims[k]) break;
      off -= index[k] * step[k];
      index[k] = 0;
    }
  }
  return r;
}

std::optional<Num> fold_gather(const InferContext& ctx, const Num& data, const Num& indices,
                               const TypeShape& out) {
  if (indices.real() || data.dims.empty()) return std::nullopt;
  int64_t axis = ctx.attr_int("axis", 0);
  if (axis < 0) axis += int64_t(data.dims.size());
  const int64_t n = data.dims[size_t(axis)];
  const int64_t outer = element_count(std::span(data.dims).first(size_t(axis)));
  const int64_t inner = element_count(std::span(data.dims).subspan(size_t(axis) + 1));
  Num r;
  r.dtype = data.dtype;
  r.dims = out.dims;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t idx : indices.i) {
      if (idx < 0) idx += n;
      if (idx < 0 || idx >= n) return std::nullopt;  // the kernel reports it
      for (int64_t e = 0; e < inner; ++e) {
        const size_t off = size_t((o * n + idx) * inner + e);
        if (data.real()) r.f.push_back(data.f[off]);
        else r.i.push_back(data.i[off]);
      }
    }
  return r;
}

std::optional<Num> fold_concat(const InferContext& ctx, const std::vector<Num>& in, const TypeShape& out) {
  const int64_t axis = ctx.attr_int("axis", 0) < 0 ? ctx.attr_int("axis", 0) + out.rank : ctx.attr_int("axis", 0);
  const int64_t outer = element_count(std::span(out.dims).first(size_t(axis)));
  Num r;
  r.dtype = in[0].dtype;
  r.dims = out.dims;
  for (int64_t o = 0; o < outer; ++o)
    for (const Num& n : in) {
      if (n.dtype != r.dtype) return std::nullopt;
      const int64_t block = element_count(std::span(n.dims).subspan(size_t(axis)));
      for (int64_t e = 0; e < block; ++e) {
        if (n.real()) r.f.push_back(n.f[size_t(o * block + e)]);
        else r.i.push_back(n.i[size_t(o * block + e)]);
      }
    }
  return r;
}

}  // namespace

std::vector<std::optional<Tensor>> fold_constants(const InferContext& ctx,
                                                  const std::vector<TypeShape>& inferred) {
  std::vector<std::optional<Tensor>> result(ctx.output_count());
  const Node& node = ctx.node();
  if (!node.domain.empty() || inferred.empty() || ctx.output_count() != 1) return result;
  const TypeShape& out = inferred[0];
  const std::string& op = node.op_type;
  auto known = [](const TypeShape& t) {
    return t.rank_known() && std::all_of(t.dims.begin(), t.dims.end(), [](int64_t d) { return d >= 0; });
  };
  const int64_t out_count = dim_product(out.dims);
  if (!known(out) || !foldable_dtype(out.dtype) || out_count < 0 || out_count > kMaxFoldElements) return result;

  // Ops that need only their input's shape.
  if (op == "Shape" || op == "Size") {
    const Shape& dims = ctx.dims(0);
    Num n;
    n.dtype = ONYX_DTYPE_INT64;
    n.dims = out.dims;
    if (op == "Size") {
      if (ctx.rank(0) < 0 || dim_product(dims) < 0) return result;
      n.i = {dim_product(dims)};
    } else {
      const int64_t rank = ctx.rank(0);
      int64_t start = ctx.attr_int("start", 0);
      if (start < 0) start += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      for (int64_t k = 0; k < out.dims[0]; ++k) {
        if (dims[size_t(start + k)] < 0) return result;
        n.i.push_back(dims[size_t(start + k)]);
      }
    }
    result[0] = write(n, ONYX_DTYPE_INT64);
    return result;
  }
  if (op == "Constant") {
    const Attribute& a = node.attributes[0];
    if (a.type == ONYX_ATTR_TENSOR && foldable_dtype(a.t.dtype())) result[0] = a.t;
    else if (a.name == "value_int" || a.name == "value_ints" || a.name == "value_float" || a.name == "value_floats") {
      Num n;
      n.dtype = out.dtype;
      n.dims = out.dims;
      if (a.name == "value_int") n.i = {a.i};
      if (a.name == "value_ints") n.i = a.ints;
      if (a.name == "value_float") n.f = {a.f};
      if (a.name == "value_floats") n.f.assign(a.floats.begin(), a.floats.end());
      result[0] = write(n, out.dtype);
    }
    return result;
  }

  // The rest need every present input constant.
  std::vector<Num> in;
  for (size_t k = 0; k < ctx.input_count(); ++k) {
    if (!ctx.has_input(k)) continue;
    auto n = read(ctx.constant(k));
    if (!n) return result;
    in.push_back(std::move(*n));
  }
  if (in.empty()) return result;
  std::optional<Num> r;
  if (op == "Identity" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten") {
    r = in[0];
    r->dims = out.dims;  // same elements, new shape
  } else if (op == "Cast" || op == "CastLike") {
    r = in[0];
  } else if (op == "Gather" && in.size() == 2) {
    r = fold_gather(ctx, in[0], in[1], out);
  } else if (op == "Concat") {
    r = fold_concat(ctx, in, out);
  } else if (op == "Slice") {
    r = fold_slice(ctx, in[0], out);
  } else if (op == "Transpose") {
    r = fold_transpose(ctx, in[0], out);
  } else if (op == "Range" && in.size() == 3 && in[0].dtype == in[1].dtype && in[0].dtype == in[2].dtype &&
             in[0].size() == 1 && in[2].size() == 1) {
    r = Num{out.dtype, out.dims, {}, {}};
    for (int64_t k = 0; k < out.dims[0]; ++k) {
      if (in[0].real()) r->f.push_back(in[0].f[0] + double(k) * in[2].f[0]);
      else r->i.push_back(in[0].i[0] + k * in[2].i[0]);
    }
  } else if (op == "ConstantOfShape") {
    const Attribute* value = node.attr("value");
    auto fill = value ? read(&value->t) : std::optional<Num>(Num{ONYX_DTYPE_FLOAT32, {1}, {}, {0.0}});
    if (!fill || fill->size() != 1) return result;
    r = Num{fill->dtype, out.dims, {}, {}};
    if (fill->real()) r->f.assign(size_t(dim_product(out.dims)), fill->f[0]);
    else r->i.assign(size_t(dim_product(out.dims)), fill->i[0]);
  } else {
    r = fold_binary(op, in, out, ctx.attr_int("fmod", 0) != 0);
  }
  if (r) result[0] = write(*r, out.dtype);
  return result;
}

}  // namespace onyx::runtime::ir::shape
