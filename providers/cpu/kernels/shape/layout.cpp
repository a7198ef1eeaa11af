// layout.cpp: ops that rearrange whole tensors by element size:
// Transpose, Concat, Split, Expand, Tile.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/elementwise/elementwise.h"
#include "kernels/registry.h"
#include "kernels/shape/shape_util.h"
#include "kernels/shape/transpose_tiles.h"

namespace onyx::cpu {
namespace {

class TransposeKernel final : public sdk::Kernel {
 public:
  explicit TransposeKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), perm_(node.get_ints("perm")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    size_t rank = x.rank();
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (size_t d = rank; d-- > 0;) perm.push_back(int64_t(d));
    std::vector<bool> seen(rank, false);
    bool valid = perm.size() == rank;
    for (int64_t p : perm) {
      valid = valid && p >= 0 && p < int64_t(rank) && !seen[size_t(p)];
      if (valid) seen[size_t(p)] = true;
    }
    if (!valid)
      return util::fail(label_, "perm %s is not a permutation of the %zu dims of input 0",
                        util::dims_str(perm).c_str(), rank);
    std::vector<int64_t> in_strides = util::strides_of(x.dims), out_dims;
    for (int64_t p : perm) out_dims.push_back(x.dim(size_t(p)));
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    if (x.size() == 0) return nullptr;
    // Collapse: drop size-1 dims; merge output neighbours that are also
    // neighbours, in the same order, in the input.
    std::vector<int64_t> dims, strides;
    int64_t last_p = -2;
    for (size_t i = 0; i < rank; ++i) {
      int64_t p = perm[i];
      if (x.dim(size_t(p)) == 1) continue;
      if (!dims.empty() && p == last_p + 1) {
        dims.back() *= x.dim(size_t(p));
        strides.back() = in_strides[size_t(p)];
      } else {
        dims.push_back(x.dim(size_t(p)));
        strides.push_back(in_strides[size_t(p)]);
      }
      last_p = p;
    }
    size_t esize = sdk::dtype_size(x.dtype);
    if (dims.size() <= 1) {  // the order does not change
      util::parallel_copy(ctx, y.raw, x.raw, shape::byte_size(x));
      return nullptr;
    }
    if (strides.back() == 1) {
      rows_contiguous(ctx, x, y, dims, strides);
      return nullptr;
    }
    shape::visit_size(esize, [&](auto tag) {
      using E = decltype(tag);
      tiled<E>(ctx, x.data<E>(), y.data<E>(), dims, strides);
    });
    return nullptr;
  }

 private:
  // The last output dim reads the input contiguously: copy whole rows.
  static void rows_contiguous(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& y,
                              const std::vector<int64_t>& dims, const std::vector<int64_t>& in_strides) {
    size_t esize = sdk::dtype_size(x.dtype), m = dims.size();
    size_t bytes = size_t(dims[m - 1]) * esize;
    int64_t rows = x.size() / dims[m - 1];
    ctx.parallel_for(size_t(rows), std::max<size_t>(1, util::kGrain * 4 / bytes), [&](size_t begin, size_t end) {
      // The first row's position by division, the next ones by counting
      // (a division per dim and row cost more than copying a 128-byte row).
      std::vector<int64_t> at(m - 1);
      int64_t rest = int64_t(begin), offset = 0;
      for (size_t d = m - 1; d-- > 0;) {
        at[d] = rest % dims[d];
        offset += at[d] * in_strides[d];
        rest /= dims[d];
      }
      for (size_t r = begin; r < end; ++r) {
        std::memcpy(static_cast<unsigned char*>(y.raw) + r * bytes,
                    static_cast<const unsigned char*>(x.raw) + size_t(offset) * esize, bytes);
        for (size_t d = m - 1; d-- > 0;) {  // next position, the last dim first
          offset += in_strides[d];
          if (++at[d] < dims[d]) break;
          offset -= at[d] * in_strides[d];
          at[d] = 0;
        }
      }
    });
  }

  // After collapsing, some output dim `j` reads the input contiguously and
  // the last output dim reads it with a stride: for every position of the
  // other dims that is a 2-D transpose, copied in square tiles so that both
  // the reads and the writes stay within a few cache lines.
  template <typename E>
  static void tiled(sdk::ComputeContext& ctx, const E* src, E* dst, const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& in_strides) {
    size_t m = dims.size(), last = m - 1;
    size_t j = size_t(std::find(in_strides.begin(), in_strides.end(), 1) - in_strides.begin());
    std::vector<int64_t> out_strides = util::strides_of(dims), other_dims, other_in, other_out;
    for (size_t d = 0; d < m; ++d) {
      if (d == j || d == last) continue;
      other_dims.push_back(dims[d]);
      other_in.push_back(in_strides[d]);
      other_out.push_back(out_strides[d]);
    }
    constexpr int64_t kTile = 32;
    int64_t rows = dims[j], cols = dims[last], col_step = in_strides[last], row_stride = out_strides[j];
    int64_t items = sdk::element_count(other_dims), row_tiles = (rows + kTile - 1) / kTile;
    size_t grain = std::max<size_t>(1, util::kGrain / size_t(kTile * cols));
    ctx.parallel_for(size_t(items * row_tiles), grain, [&](size_t begin, size_t end) {
      for (size_t w = begin; w < end; ++w) {
        int64_t rest = int64_t(w) / row_tiles, in_base = 0, out_base = 0;
        for (size_t d = other_dims.size(); d-- > 0;) {
          in_base += rest % other_dims[d] * other_in[d];
          out_base += rest % other_dims[d] * other_out[d];
          rest /= other_dims[d];
        }
        int64_t r0 = int64_t(w) % row_tiles * kTile, r1 = std::min(rows, r0 + kTile);
        if constexpr (sizeof(E) == 4) {
          if (transpose_tiles::supported()) {
            transpose_tiles::transpose32(reinterpret_cast<const uint32_t*>(src + in_base + r0), col_step,
                                         reinterpret_cast<uint32_t*>(dst + out_base + r0 * row_stride), row_stride,
                                         r1 - r0, cols);
            continue;
          }
        }
        for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
          int64_t c1 = std::min(cols, c0 + kTile);
          for (int64_t r = r0; r < r1; ++r) {
            const E* s = src + in_base + r;
            E* o = dst + out_base + r * row_stride;
            for (int64_t c = c0; c < c1; ++c) o[c] = s[c * col_step];
          }
        }
      }
    });
  }

  std::string label_;
  std::vector<int64_t> perm_;
};

// Concat along `axis`: each outer index copies one block of every input.
class ConcatKernel final : public sdk::Kernel {
 public:
  explicit ConcatKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axis_(node.get_int("axis", 1)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    std::vector<sdk::Tensor> in;
    for (size_t k = 0; k < ctx.input_count(); ++k)
      if (auto t = ctx.input(k)) in.push_back(*t);
    if (in.empty()) return util::fail(label_, "no inputs");
    const sdk::Tensor& first = in[0];
    int64_t rank = int64_t(first.rank()), axis = 0;
    if (!util::normalize_axis(axis_, rank, &axis))
      return util::fail(label_, "axis %lld is out of range for inputs of rank %lld", (long long)axis_,
                        (long long)rank);
    std::vector<int64_t> out_dims = first.shape();
    out_dims[size_t(axis)] = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      bool same = in[k].dtype == first.dtype && int64_t(in[k].rank()) == rank;
      for (int64_t d = 0; same && d < rank; ++d)
        same = d == axis || in[k].dim(size_t(d)) == first.dim(size_t(d));
      if (!same)
        return util::fail(label_, "input %zu (%s %s) does not match input 0 (%s %s) off axis %lld", k,
                          sdk::dtype_name(in[k].dtype), util::dims_str(in[k].dims).c_str(),
                          sdk::dtype_name(first.dtype), util::dims_str(first.dims).c_str(), (long long)axis);
      out_dims[size_t(axis)] += in[k].dim(size_t(axis));
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, first.dtype, out_dims, &y));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out_dims[size_t(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= out_dims[size_t(d)];
    size_t esize = sdk::dtype_size(first.dtype);
    size_t out_block = size_t(out_dims[size_t(axis)] * inner) * esize;
    if (out_block == 0 || outer == 0) return nullptr;
    size_t grain = std::max<size_t>(1, util::kGrain * 4 / out_block);
    ctx.parallel_for(size_t(outer), grain, [&](size_t begin, size_t end) {
      for (size_t o = begin; o < end; ++o) {
        unsigned char* dst = static_cast<unsigned char*>(y.raw) + o * out_block;
        for (const sdk::Tensor& t : in) {
          size_t block = size_t(t.dim(size_t(axis)) * inner) * esize;
          if (block) std::memcpy(dst, static_cast<const unsigned char*>(t.raw) + o * block, block);
          dst += block;
        }
      }
    });
    return nullptr;
  }

 private:
  std::string label_;
  int64_t axis_;
};

// Split along `axis` into the node's outputs: sizes from the attribute
// `split` (before opset 13) or input 1, else equal parts (from opset 18 the
// last part may be smaller: ceil(dim / parts)).
class SplitKernel final : public sdk::Kernel {
 public:
  explicit SplitKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        opset_(node.opset),
        axis_(node.get_int("axis", 0)),
        attr_split_(node.get_ints("split")),
        outputs_(node.outputs.size()) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t rank = int64_t(x.rank()), axis = 0;
    if (!util::normalize_axis(axis_, rank, &axis))
      return util::fail(label_, "axis %lld is out of range for input 0 of rank %lld", (long long)axis_,
                        (long long)rank);
    int64_t dim = x.dim(size_t(axis)), parts = int64_t(outputs_);
    if (parts == 0) return util::fail(label_, "the node has no outputs");
    std::vector<int64_t> split = attr_split_;
    bool present = false;
    std::string why;
    // Split-1 also took the sizes as an optional input 1, like Split-13.
    if (split.empty() && !shape::read_int_input(ctx, 1, &split, &present, &why))
      return util::fail(label_, "%s", why.c_str());
    if (split.empty()) {
      int64_t part = opset_ >= 18 ? (dim + parts - 1) / parts : dim / parts;
      if (opset_ < 18 && dim % parts != 0)
        return util::fail(label_, "axis %lld of size %lld does not split into %lld equal parts",
                          (long long)axis, (long long)dim, (long long)parts);
      for (int64_t k = 0; k < parts; ++k) split.push_back(std::clamp(dim - k * part, int64_t(0), part));
    }
    int64_t total = 0;
    for (int64_t s : split) total += s < 0 ? -1 : s;
    if (int64_t(split.size()) != parts || total != dim)
      return util::fail(label_, "split %s does not divide axis %lld of size %lld into %lld outputs",
                        util::dims_str(split).c_str(), (long long)axis, (long long)dim, (long long)parts);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(size_t(d));
    size_t esize = sdk::dtype_size(x.dtype), in_block = size_t(dim * inner) * esize;
    int64_t offset = 0;
    for (size_t k = 0; k < outputs_; ++k) {
      std::vector<int64_t> dims = x.shape();
      dims[size_t(axis)] = split[k];
      sdk::Tensor y;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(k, x.dtype, dims, &y));
      size_t block = size_t(split[k] * inner) * esize;
      const unsigned char* src = static_cast<const unsigned char*>(x.raw) + size_t(offset * inner) * esize;
      if (block)
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(o) * block, src + size_t(o) * in_block, block);
      offset += split[k];
    }
    return nullptr;
  }

 private:
  std::string label_;
  int64_t opset_, axis_;
  std::vector<int64_t> attr_split_;
  size_t outputs_;
};

// Expand: broadcast input 0 to its shape and input 1 (multidirectionally).
class ExpandKernel final : public sdk::Kernel {
 public:
  explicit ExpandKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> shape, out_dims;
    bool present = false;
    std::string why;
    if (!shape::read_int_input(ctx, 1, &shape, &present, &why) || !present)
      return util::fail(label_, "%s", present ? why.c_str() : "input 1 (shape) is missing");
    why = ew::broadcast_shape({x.dims, shape}, &out_dims);
    if (!why.empty()) return util::fail(label_, "%s", why.c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    ew::BroadcastPlan plan = ew::make_plan({x.dims}, out_dims);
    int64_t step = plan.strides[0].back();
    shape::visit_size(sdk::dtype_size(x.dtype), [&](auto tag) {
      using E = decltype(tag);
      const E* src = x.data<E>();
      E* dst = y.data<E>();
      // A fill or a copy per run, not an element loop with a run-time step
      // (a transformer block's training step, 1 thread: a scalar's Expand
      // 0.60 -> 0.19 ms, a [64, 16, 1] column's to 256 wide 0.22 -> 0.06).
      ew::for_each_run<1>(ctx, plan, [&](const std::array<int64_t, 1>& off, int64_t out, int64_t n) {
        if (step == 0)
          std::fill_n(dst + out, n, src[off[0]]);
        else
          std::memcpy(dst + out, src + off[0], size_t(n) * sizeof(E));
      });
    });
    return nullptr;
  }

 private:
  std::string label_;
};

// Tile: output dim d is input dim d times repeats[d]; each output row copies
// the matching input row `repeats.back()` times.
class TileKernel final : public sdk::Kernel {
 public:
  explicit TileKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> reps;
    bool present = false;
    std::string why;
    if (!shape::read_int_input(ctx, 1, &reps, &present, &why) || !present)
      return util::fail(label_, "%s", present ? why.c_str() : "input 1 (repeats) is missing");
    size_t rank = x.rank();
    if (reps.size() != rank || std::any_of(reps.begin(), reps.end(), [](int64_t r) { return r < 0; }))
      return util::fail(label_, "repeats %s must hold %zu non-negative values (the rank of input 0)",
                        util::dims_str(reps).c_str(), rank);
    std::vector<int64_t> out_dims(rank);
    for (size_t d = 0; d < rank; ++d) out_dims[d] = x.dim(d) * reps[d];
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    int64_t count = sdk::element_count(out_dims);
    if (count == 0) return nullptr;
    if (rank == 0) {
      std::memcpy(y.raw, x.raw, sdk::dtype_size(x.dtype));
      return nullptr;
    }
    size_t esize = sdk::dtype_size(x.dtype);
    int64_t in_row = x.dim(rank - 1), out_row = out_dims[rank - 1], rows = count / out_row;
    std::vector<int64_t> in_strides = util::strides_of(x.dims);
    ctx.parallel_for(size_t(rows), std::max<size_t>(1, util::kGrain / size_t(out_row)),
                     [&](size_t begin, size_t end) {
                       for (size_t r = begin; r < end; ++r) {
                         // The source row: each output index modulo the input dim.
                         int64_t rest = int64_t(r), src = 0;
                         for (size_t d = rank - 1; d-- > 0;) {
                           src += rest % out_dims[d] % x.dim(d) * in_strides[d];
                           rest /= out_dims[d];
                         }
                         unsigned char* dst = static_cast<unsigned char*>(y.raw) + r * size_t(out_row) * esize;
                         const unsigned char* from = static_cast<const unsigned char*>(x.raw) + size_t(src) * esize;
                         for (int64_t k = 0; k < reps[rank - 1]; ++k)
                           std::memcpy(dst + size_t(k * in_row) * esize, from, size_t(in_row) * esize);
                       }
                     });
    return nullptr;
  }

 private:
  std::string label_;
};

}  // namespace

void register_layout_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Transpose").inputs(1).check(shape::sized_input(0)).create<TransposeKernel>());
  registry.add(sdk::KernelDefBuilder("Split")
                   .inputs(1, 2)
                   .input_type(1, shape::kInt64)
                   .check(shape::sized_input(0))
                   .create<SplitKernel>());
  registry.add(sdk::KernelDefBuilder("Expand")
                   .since(8)
                   .inputs(2)
                   .input_type(1, shape::kInt64)
                   .check(shape::sized_input(0))
                   .create<ExpandKernel>());
  registry.add(sdk::KernelDefBuilder("Tile")
                   .since(6)
                   .inputs(2)
                   .input_type(1, shape::kInt64)
                   .check(shape::sized_input(0))
                   .create<TileKernel>());
  registry.add(sdk::KernelDefBuilder("Concat")
                   .inputs(1, 1 << 20)
                   .type_constraint("T", {}, {})
                   .check([](const sdk::NodeInfo& node) {
                     std::string why;
                     for (size_t k = 0; why.empty() && k < node.inputs.size(); ++k) why = shape::require_sized(node, {k});
                     return why;
                   })
                   .create<ConcatKernel>());
}

}  // namespace onyx::cpu
