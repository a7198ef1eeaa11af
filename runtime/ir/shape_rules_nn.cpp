// shape_rules_nn.cpp: matrix products, convolutions, pooling and
// normalizations.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ir/shape_rules.h"

namespace onyx::runtime::ir::shape {

namespace {

// a == b, treating unknown as compatible.
bool compatible(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

// numpy.matmul of inputs `ia` and `ib`.
}  // namespace

Status matmul_shape(InferContext& ctx, size_t ia, size_t ib, int32_t dtype) {
  const int32_t ra = ctx.rank(ia), rb = ctx.rank(ib);
  if (ra == 0 || rb == 0) return ctx.error("inputs must have rank >= 1, got scalars");
  if (ra < 0 || rb < 0) {
    ctx.set_output_dtype(0, dtype);
    return Status();
  }
  // numpy.matmul: a 1-D operand becomes a matrix, and that axis is dropped after.
  Shape a = ctx.dims(ia), b = ctx.dims(ib);
  if (ra == 1) a.insert(a.begin(), 1);
  if (rb == 1) b.push_back(1);
  const int64_t k_a = a.back(), k_b = b[b.size() - 2];
  if (!compatible(k_a, k_b))
    return ctx.error("inner dimensions differ: " + shape_string(ctx.dims(ia)) + " x " +
                     shape_string(ctx.dims(ib)));
  TypeShape batch_a{dtype, int32_t(a.size() - 2), Shape(a.begin(), a.end() - 2)};
  TypeShape batch_b{dtype, int32_t(b.size() - 2), Shape(b.begin(), b.end() - 2)};
  const TypeShape both[] = {batch_a, batch_b};
  ONYX_ASSIGN_OR_RETURN(TypeShape out, broadcast(ctx, both));
  if (ra > 1) out.dims.push_back(a[a.size() - 2]);
  if (rb > 1) out.dims.push_back(b.back());
  ctx.set_output(0, dtype, out.dims);
  return Status();
}

namespace {

Status matmul(InferContext& ctx) { return matmul_shape(ctx, 0, 1, ctx.dtype(0)); }
Status matmul_integer(InferContext& ctx) { return matmul_shape(ctx, 0, 1, ONYX_DTYPE_INT32); }
// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point).
Status qlinear_matmul(InferContext& ctx) { return matmul_shape(ctx, 0, 3, ctx.dtype(7)); }

}  // namespace

Status gemm_shape(InferContext& ctx, size_t ia, size_t ib, size_t ic, int32_t dtype) {
  if (ctx.rank(ia) < 0 || ctx.rank(ib) < 0) {
    ctx.set_output_rank(0, dtype, 2);
    return Status();
  }
  if (ctx.rank(ia) != 2 || ctx.rank(ib) != 2)
    return ctx.error("A and B must be matrices, got " + shape_string(ctx.dims(ia)) + " and " +
                     shape_string(ctx.dims(ib)));
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const Shape &a = ctx.dims(ia), &b = ctx.dims(ib);
  const int64_t m = ta ? a[1] : a[0], k_a = ta ? a[0] : a[1];
  const int64_t k_b = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (!compatible(k_a, k_b))
    return ctx.error("inner dimensions differ: A " + shape_string(a) + (ta ? " (transposed)" : "") +
                     " x B " + shape_string(b) + (tb ? " (transposed)" : ""));
  Shape out = {m, n};
  if (ctx.has_input(ic)) {  // C broadcasts one way, to [M, N]
    const TypeShape both[] = {{dtype, 2, out}, ctx.input_type(ic)};
    ONYX_ASSIGN_OR_RETURN(TypeShape b_out, broadcast(ctx, both));
    if (b_out.rank_known()) {
      if (b_out.rank != 2 || !compatible(b_out.dims[0], m) || !compatible(b_out.dims[1], n))
        return ctx.error("C " + shape_string(ctx.dims(ic)) + " does not broadcast to " +
                         shape_string(out));
      out = b_out.dims;
    }
  }
  ctx.set_output(0, dtype, out);
  return Status();
}

namespace {

Status gemm(InferContext& ctx) { return gemm_shape(ctx, 0, 1, 2, ctx.dtype(0)); }

// Spatial attributes shared by convolution and pooling.
struct Window {
  size_t spatial = 0;
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  std::string auto_pad;
};

// Reads and checks kernel_shape/strides/dilations/pads. `kernel` may come
// from W's dims (Conv) when the attribute is absent.
StatusOr<Window> read_window(InferContext& ctx, size_t spatial, std::vector<int64_t> kernel) {
  Window w;
  w.spatial = spatial;
  if (auto k = ctx.attr_ints("kernel_shape")) kernel = *k;
  w.kernel = std::move(kernel);
  auto list = [&](const char* name, size_t count, int64_t fallback) -> StatusOr<std::vector<int64_t>> {
    auto v = ctx.attr_ints(name);
    if (!v) return std::vector<int64_t>(count, fallback);
    if (v->size() != count)
      return ctx.error(std::string(name) + " has " + std::to_string(v->size()) + " entries, expected " +
                       std::to_string(count));
    return *v;
  };
  if (w.kernel.size() != spatial)
    return ctx.error("kernel_shape has " + std::to_string(w.kernel.size()) + " entries for " +
                     std::to_string(spatial) + " spatial dims");
  ONYX_ASSIGN_OR_RETURN(w.strides, list("strides", spatial, 1));
  ONYX_ASSIGN_OR_RETURN(w.dilations, list("dilations", spatial, 1));
  ONYX_ASSIGN_OR_RETURN(w.pads, list("pads", 2 * spatial, 0));
  for (size_t i = 0; i < spatial; ++i)
    if (w.strides[i] <= 0 || w.dilations[i] <= 0)
      return ctx.error("strides and dilations must be positive");
  w.auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (w.auto_pad == "VALID") std::fill(w.pads.begin(), w.pads.end(), 0);
  return w;
}

// Output size of one spatial axis of a convolution or pooling window. Every
// step is checked: kernel, dilation, strides and pads are the model's choice.
StatusOr<int64_t> window_output(InferContext& ctx, const Window& w, size_t i, int64_t in, bool ceil_mode) {
  if (in < 0 || w.kernel[i] < 0) return kUnknown;
  const int64_t s = w.strides[i];  // > 0 (read_window)
  auto ceil_div = [](int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); };  // a >= 0, b > 0
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") return ceil_div(in, s);
  const std::string axis = "spatial axis " + std::to_string(i);
  const int64_t dilated[] = {w.kernel[i] - 1, w.dilations[i]};
  ONYX_ASSIGN_OR_RETURN(const int64_t reach, ctx.product(dilated, axis + ": kernel - 1 and dilation"));
  const int64_t extent_terms[] = {reach, 1};
  ONYX_ASSIGN_OR_RETURN(const int64_t effective_kernel, ctx.sum(extent_terms, axis + ": kernel extent"));
  const int64_t padded_terms[] = {in, w.pads[i], w.pads[i + w.spatial]};
  ONYX_ASSIGN_OR_RETURN(const int64_t padded, ctx.sum(padded_terms, axis + ": input and pads"));
  const int64_t span_terms[] = {padded, -effective_kernel};
  ONYX_ASSIGN_OR_RETURN(const int64_t span, ctx.sum(span_terms, axis + ": padded input less the kernel extent"));
  if (span < 0)
    return ctx.error(axis + ": kernel extent " + std::to_string(effective_kernel) + " exceeds the padded input " +
                     std::to_string(padded));
  int64_t out = (ceil_mode ? ceil_div(span, s) : span / s) + 1;
  // ceil_mode: a last window that would start in the end padding is dropped.
  if (ceil_mode) {
    int64_t last_start = 0;
    const int64_t begin_terms[] = {in, w.pads[i]};
    ONYX_ASSIGN_OR_RETURN(const int64_t padded_begin, ctx.sum(begin_terms, axis + ": input and begin pad"));
    if (__builtin_mul_overflow(out - 1, s, &last_start) || last_start >= padded_begin) --out;
  }
  return out;
}

// A convolution of input `ix` by weight `iw` whose output has `dtype`:
// Conv (0, 1), ConvInteger (0, 1; int32) and QLinearConv (0, 3). onnx 1.12's
// convPoolShapeInference reads past its arrays when W's rank differs from
// X's, so these three never reach the onnx fallback.
}  // namespace

Status conv_shape(InferContext& ctx, size_t ix, size_t iw, int32_t dtype, bool channels_last) {
  const int32_t rank = ctx.rank(ix) >= 0 ? ctx.rank(ix) : ctx.rank(iw);
  if (rank < 0) return ctx.set_output_dtype(0, dtype), Status();
  if (rank < 3)
    return ctx.error("input must have rank >= 3 (" + std::string(channels_last ? "N, spatial..., C" : "N, C, spatial...") +
                     "), got rank " + std::to_string(rank));
  const size_t spatial = size_t(rank - 2);
  Shape x = ctx.rank(ix) >= 0 ? ctx.dims(ix) : Shape(size_t(rank), kUnknown);
  if (channels_last) std::rotate(x.begin() + 1, x.end() - 1, x.end());  // as N, C, spatial...
  Shape w = ctx.rank(iw) >= 0 ? ctx.dims(iw) : Shape(size_t(rank), kUnknown);
  if (w.size() != size_t(rank))
    return ctx.error("weight " + shape_string(w) + " and input " + shape_string(x) + " ranks differ");
  const int64_t group = ctx.attr_int("group", 1);
  if (group <= 0) return ctx.error("group must be positive");
  if (x[1] >= 0 && w[1] >= 0 && x[1] != w[1] * group)
    return ctx.error("input has " + std::to_string(x[1]) + " channels but weight " + shape_string(w) +
                     " with group " + std::to_string(group) + " expects " + std::to_string(w[1] * group));
  if (w[0] >= 0 && w[0] % group != 0)
    return ctx.error(std::to_string(w[0]) + " output channels are not divisible by group " +
                     std::to_string(group));
  ONYX_ASSIGN_OR_RETURN(Window win, read_window(ctx, spatial, Shape(w.begin() + 2, w.end())));
  for (size_t i = 0; i < spatial; ++i)
    if (!compatible(win.kernel[i], w[i + 2]))
      return ctx.error("kernel_shape does not match weight " + shape_string(w));
  Shape out = {x[0], w[0]};
  for (size_t i = 0; i < spatial; ++i) {
    ONYX_ASSIGN_OR_RETURN(int64_t d, window_output(ctx, win, i, x[i + 2], false));
    out.push_back(d);
  }
  if (channels_last) std::rotate(out.begin() + 1, out.begin() + 2, out.end());  // N, spatial..., M
  ctx.set_output(0, dtype, out);
  return Status();
}

namespace {

Status conv(InferContext& ctx) { return conv_shape(ctx, 0, 1, ctx.dtype(0)); }
Status conv_integer(InferContext& ctx) { return conv_shape(ctx, 0, 1, ONYX_DTYPE_INT32); }
// QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?): y is y_zero_point's type.
Status qlinear_conv(InferContext& ctx) { return conv_shape(ctx, 0, 3, ctx.dtype(7)); }

Status conv_transpose(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  const int32_t rank = ctx.rank(0) >= 0 ? ctx.rank(0) : ctx.rank(1);
  if (rank < 0) return ctx.set_output_dtype(0, dtype), Status();
  if (rank < 3) return ctx.error("input must have rank >= 3 (N, C, spatial...), got rank " + std::to_string(rank));
  const size_t spatial = size_t(rank - 2);
  Shape x = ctx.rank(0) >= 0 ? ctx.dims(0) : Shape(size_t(rank), kUnknown);
  Shape w = ctx.rank(1) >= 0 ? ctx.dims(1) : Shape(size_t(rank), kUnknown);
  if (w.size() != size_t(rank))
    return ctx.error("weight " + shape_string(w) + " and input " + shape_string(x) + " ranks differ");
  const int64_t group = ctx.attr_int("group", 1);
  if (group <= 0) return ctx.error("group must be positive");
  if (!compatible(x[1], w[0]))  // W is [C, M/group, k...]
    return ctx.error("input has " + std::to_string(x[1]) + " channels but weight " + shape_string(w) +
                     " expects " + std::to_string(w[0]));
  ONYX_ASSIGN_OR_RETURN(Window win, read_window(ctx, spatial, Shape(w.begin() + 2, w.end())));
  std::vector<int64_t> output_padding = ctx.attr_ints("output_padding").value_or(std::vector<int64_t>(spatial, 0));
  if (output_padding.size() != spatial) return ctx.error("output_padding has the wrong length");
  Shape out = {x[0], w[1] < 0 ? kUnknown : w[1] * group};
  if (auto output_shape = ctx.attr_ints("output_shape")) {
    // Either the spatial sizes or the full shape; the last `spatial` entries count.
    if (output_shape->size() < spatial) return ctx.error("output_shape has too few entries");
    out.insert(out.end(), output_shape->end() - long(spatial), output_shape->end());
    ctx.set_output(0, dtype, out);
    return Status();
  }
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = x[i + 2], k = win.kernel[i], s = win.strides[i];
    if (in < 0 || k < 0) {
      out.push_back(kUnknown);
    } else if (win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER") {
      const int64_t factors[] = {in, s};
      ONYX_ASSIGN_OR_RETURN(int64_t d, ctx.product(factors, "spatial axis " + std::to_string(i) + " and stride"));
      out.push_back(d);
    } else {
      const std::string axis = "spatial axis " + std::to_string(i);
      const int64_t strided[] = {s, in - 1}, dilated[] = {k - 1, win.dilations[i]};
      ONYX_ASSIGN_OR_RETURN(const int64_t spread, ctx.product(strided, axis + ": stride and input - 1"));
      ONYX_ASSIGN_OR_RETURN(const int64_t reach, ctx.product(dilated, axis + ": kernel - 1 and dilation"));
      if (win.pads[i] == INT64_MIN || win.pads[i + spatial] == INT64_MIN)
        return ctx.error(axis + ": pads " + list_string(win.pads) + " are out of range");
      const int64_t terms[] = {spread, output_padding[i], reach, 1, -win.pads[i], -win.pads[i + spatial]};
      ONYX_ASSIGN_OR_RETURN(int64_t d, ctx.sum(terms, axis + ": output size terms"));
      if (d < 0) return ctx.error("pads make spatial axis " + std::to_string(i) + " negative");
      out.push_back(d);
    }
  }
  ctx.set_output(0, dtype, out);
  return Status();
}

// Pools over N x C x D1 x ..., or N x D1 x ... x C with channels_last
// (com.microsoft QLinearAveragePool).
Status pool_with_layout(InferContext& ctx, bool channels_last) {
  const int32_t dtype = ctx.dtype(0);
  const int32_t rank = ctx.rank(0);
  if (rank < 0) {
    ctx.set_output_dtype(0, dtype);
    ctx.set_output_dtype(1, ONYX_DTYPE_INT64);
    return Status();
  }
  if (rank < 3)
    return ctx.error("input must have rank >= 3 (" + std::string(channels_last ? "N, spatial..., C" : "N, C, spatial...") +
                     "), got rank " + std::to_string(rank));
  if (!ctx.attr_ints("kernel_shape")) return ctx.error("kernel_shape is required");
  const size_t spatial = size_t(rank - 2), first = channels_last ? 1 : 2;
  ONYX_ASSIGN_OR_RETURN(Window win, read_window(ctx, spatial, {}));
  const bool ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  const Shape& x = ctx.dims(0);
  Shape out = {x[0]};
  if (!channels_last) out.push_back(x[1]);
  for (size_t i = 0; i < spatial; ++i) {
    ONYX_ASSIGN_OR_RETURN(int64_t d, window_output(ctx, win, i, x[i + first], ceil_mode));
    out.push_back(d);
  }
  if (channels_last) out.push_back(x[size_t(rank - 1)]);
  ctx.set_output(0, dtype, out);
  ctx.set_output(1, ONYX_DTYPE_INT64, out);  // MaxPool's Indices
  return Status();
}

Status pool(InferContext& ctx) { return pool_with_layout(ctx, false); }

// Global pools: [N, C, 1, 1, ...].
Status global_pool(InferContext& ctx) {
  if (ctx.rank(0) < 0) return ctx.set_output_dtype(0, ctx.dtype(0)), Status();
  if (ctx.rank(0) < 2) return ctx.error("input must have rank >= 2");
  Shape out = ctx.dims(0);
  std::fill(out.begin() + 2, out.end(), 1);
  ctx.set_output(0, ctx.dtype(0), out);
  return Status();
}

Status batch_norm(InferContext& ctx) {
  same_as_input(ctx, 0, 0);
  // Training outputs (running mean/var; opset <= 6 and 9 also saved stats): [C].
  int64_t channels = ctx.rank(0) >= 2 ? ctx.dims(0)[1] : kUnknown;
  for (size_t k = 1; k < ctx.output_count(); ++k)
    ctx.set_output(k, ctx.dtype(3) != ONYX_DTYPE_UNDEFINED ? ctx.dtype(3) : ctx.dtype(0), {channels});
  return Status();
}

// LayerNormalization: Y like X; Mean and InvStdDev keep X's leading dims
// and have 1 from `axis` on, in the stash type.
Status layer_norm(InferContext& ctx) {
  same_as_input(ctx, 0, 0);
  const int32_t stash = int32_t(ctx.attr_int("stash_type", ONYX_DTYPE_FLOAT32));
  if (ctx.rank(0) < 0) {
    for (size_t k = 1; k < ctx.output_count(); ++k) ctx.set_output_dtype(k, stash);
    return Status();
  }
  ONYX_ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.attr_int("axis", -1), ctx.rank(0)));
  Shape stats = ctx.dims(0);
  std::fill(stats.begin() + axis, stats.end(), 1);
  for (size_t k = 1; k < ctx.output_count(); ++k) ctx.set_output(k, stash, stats);
  return Status();
}

// DepthToSpace / SpaceToDepth: [N, C, H, W] with blocksize b.
Status depth_to_space(InferContext& ctx) {
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (b <= 0) return ctx.error("blocksize must be positive");
  if (ctx.rank(0) < 0) return ctx.set_output_rank(0, ctx.dtype(0), 4), Status();
  if (ctx.rank(0) != 4) return ctx.error("input must be 4-D");
  Shape x = ctx.dims(0);
  const int64_t block[] = {b, b};
  ONYX_ASSIGN_OR_RETURN(const int64_t b2, ctx.product(block, "blocksize^2"));
  if (x[1] >= 0 && x[1] % b2 != 0)
    return ctx.error("channels " + std::to_string(x[1]) + " are not divisible by blocksize^2");
  Shape out = {x[0], x[1] < 0 ? kUnknown : x[1] / b2, kUnknown, kUnknown};
  for (size_t a : {size_t(2), size_t(3)}) {
    if (x[a] < 0) continue;
    const int64_t factors[] = {x[a], b};
    ONYX_ASSIGN_OR_RETURN(out[a], ctx.product(factors, "dim " + std::to_string(a) + " and blocksize"));
  }
  ctx.set_output(0, ctx.dtype(0), out);
  return Status();
}

Status space_to_depth(InferContext& ctx) {
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (b <= 0) return ctx.error("blocksize must be positive");
  if (ctx.rank(0) < 0) return ctx.set_output_rank(0, ctx.dtype(0), 4), Status();
  if (ctx.rank(0) != 4) return ctx.error("input must be 4-D");
  Shape x = ctx.dims(0);
  for (int a : {2, 3})
    if (x[size_t(a)] >= 0 && x[size_t(a)] % b != 0)
      return ctx.error("spatial dims " + shape_string(x) + " are not divisible by blocksize");
  int64_t channels = kUnknown;
  if (x[1] >= 0) {
    const int64_t factors[] = {x[1], b, b};
    ONYX_ASSIGN_OR_RETURN(channels, ctx.product(factors, "channels and blocksize^2"));
  }
  ctx.set_output(0, ctx.dtype(0), {x[0], channels, x[2] < 0 ? kUnknown : x[2] / b, x[3] < 0 ? kUnknown : x[3] / b});
  return Status();
}

// RNN / GRU / LSTM: Y is [seq, directions, batch, hidden] ([batch, seq,
// directions, hidden] with layout 1); Y_h and Y_c are [directions, batch,
// hidden] ([batch, directions, hidden]).
Status recurrent(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  const std::string& op = ctx.node().op_type;
  const int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const int64_t directions = ctx.attr_string("direction", "forward") == "bidirectional" ? 2 : 1;
  const bool batch_first = ctx.attr_int("layout", 0) != 0;
  int64_t hidden = ctx.attr_int("hidden_size", kUnknown);
  if (hidden < 0 && ctx.rank(1) == 3 && ctx.dims(1)[1] >= 0) hidden = ctx.dims(1)[1] / gates;
  int64_t seq = kUnknown, batch = kUnknown;
  if (ctx.rank(0) >= 0) {
    if (ctx.rank(0) != 3) return ctx.error("X must be 3-D, is " + shape_string(ctx.dims(0)));
    seq = ctx.dims(0)[batch_first ? 1 : 0];
    batch = ctx.dims(0)[batch_first ? 0 : 1];
  }
  if (batch_first) ctx.set_output(0, dtype, {batch, seq, directions, hidden});
  else ctx.set_output(0, dtype, {seq, directions, batch, hidden});
  for (size_t k = 1; k < ctx.output_count(); ++k) {
    if (batch_first) ctx.set_output(k, dtype, {batch, directions, hidden});
    else ctx.set_output(k, dtype, {directions, batch, hidden});
  }
  return Status();
}

// GridSample: [N, C] of X, then the grid's output locations.
Status grid_sample(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  if (ctx.rank(1) < 0) return ctx.set_output_dtype(0, dtype), Status();
  if (ctx.rank(1) < 3) return ctx.error("grid must have rank >= 3");
  const Shape& grid = ctx.dims(1);
  Shape out = {ctx.rank(0) >= 2 ? ctx.dims(0)[0] : grid[0], ctx.rank(0) >= 2 ? ctx.dims(0)[1] : kUnknown};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  ctx.set_output(0, dtype, out);
  return Status();
}

// STFT(signal [batch, length, 1|2], frame_step, window?, frame_length?):
// [batch, frames, bins, 2]; frames = (length - frame) / step + 1, bins =
// frame / 2 + 1 when onesided (the default; onnx 1.12's own inference
// wrongly defaults it to 0, onnx/onnx#7731).
Status stft(InferContext& ctx) {
  const int32_t dtype = ctx.dtype(0);
  int64_t frame = kUnknown;
  if (auto fl = ctx.ints(3); fl && fl->size() == 1) frame = (*fl)[0];
  else if (ctx.rank(2) == 1) frame = ctx.dims(2)[0];
  int64_t step = kUnknown;
  if (auto st = ctx.ints(1); st && st->size() == 1) step = (*st)[0];
  if (step == 0 || frame == 0) return ctx.error("frame_step and frame_length must be positive");
  int64_t batch = kUnknown, frames = kUnknown;
  if (ctx.rank(0) >= 0) {
    if (ctx.rank(0) != 3) return ctx.error("signal must be [batch, length, 1 or 2]");
    batch = ctx.dims(0)[0];
    const int64_t length = ctx.dims(0)[1];
    if (length >= 0 && frame > 0 && step > 0) {
      if (length < frame) return ctx.error("frame length " + std::to_string(frame) + " exceeds the signal");
      frames = (length - frame) / step + 1;
    }
  }
  const bool onesided = ctx.attr_int("onesided", 1) != 0;
  const int64_t bins = frame < 0 ? kUnknown : onesided ? frame / 2 + 1 : frame;
  ctx.set_output(0, dtype, {batch, frames, bins, 2});
  return Status();
}

Status like_input(InferContext& ctx) {
  same_as_input(ctx, 0, 0);
  return Status();
}

}  // namespace

Status pool_shape(InferContext& ctx, bool channels_last) { return pool_with_layout(ctx, channels_last); }

void add_nn_rules(RuleTable& table) {
  table["QLinearMatMul"] = qlinear_matmul;
  table["RNN"] = recurrent;
  table["GRU"] = recurrent;
  table["LSTM"] = recurrent;
  table["GridSample"] = grid_sample;
  table["STFT"] = stft;
  table["RMSNormalization"] = like_input;
  table["RotaryEmbedding"] = like_input;
  table["MatMul"] = matmul;
  table["MatMulInteger"] = matmul_integer;
  table["Gemm"] = gemm;
  table["Conv"] = conv;
  table["ConvInteger"] = conv_integer;
  table["QLinearConv"] = qlinear_conv;
  table["ConvTranspose"] = conv_transpose;
  table["MaxPool"] = pool;
  table["AveragePool"] = pool;
  table["LpPool"] = pool;
  table["GlobalAveragePool"] = global_pool;
  table["GlobalMaxPool"] = global_pool;
  table["GlobalLpPool"] = global_pool;
  table["BatchNormalization"] = batch_norm;
  table["LayerNormalization"] = layer_norm;
  table["GroupNormalization"] = like_input;
  table["DepthToSpace"] = depth_to_space;
  table["SpaceToDepth"] = space_to_depth;
}

}  // namespace onyx::runtime::ir::shape
