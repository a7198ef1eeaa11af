// slice_pad.cpp: Slice (attribute form before opset 10, inputs after, any
// step sign) and Pad (constant, reflect, edge, wrap; negative pads crop).
#include <algorithm>

#include "kernels/registry.h"
#include "kernels/shape/shape_util.h"

namespace onyx::cpu {
namespace {

class SliceKernel final : public sdk::Kernel {
 public:
  explicit SliceKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        from_attributes_(node.opset < 10),
        attr_starts_(node.get_ints("starts")),
        attr_ends_(node.get_ints("ends")),
        attr_axes_(node.get_ints("axes")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> starts = attr_starts_, ends = attr_ends_, axes = attr_axes_, steps;
    if (!from_attributes_) {
      const char* names[] = {"starts", "ends", "axes", "steps"};
      std::vector<int64_t>* lists[] = {&starts, &ends, &axes, &steps};
      for (size_t k = 0; k < 4; ++k) {
        bool present = false;
        std::string why;
        if (!shape::read_int_input(ctx, k + 1, lists[k], &present, &why))
          return util::fail(label_, "%s", why.c_str());
        if (!present && k < 2) return util::fail(label_, "input %zu (%s) is missing", k + 1, names[k]);
      }
    }
    size_t n = starts.size(), rank = x.rank();
    if (axes.empty())
      for (size_t k = 0; k < n; ++k) axes.push_back(int64_t(k));
    if (steps.empty()) steps.assign(n, 1);
    if (ends.size() != n || axes.size() != n || steps.size() != n)
      return util::fail(label_, "starts, ends, axes and steps have different lengths (%zu, %zu, %zu, %zu)",
                        n, ends.size(), axes.size(), steps.size());
    std::vector<int64_t> start(rank, 0), step(rank, 1), out_dims = x.shape();
    std::vector<bool> seen(rank, false);
    for (size_t k = 0; k < n; ++k) {
      int64_t axis = 0;
      if (!util::normalize_axis(axes[k], int64_t(rank), &axis))
        return util::fail(label_, "axis %lld is out of range for input 0 of rank %zu", (long long)axes[k], rank);
      if (seen[size_t(axis)]) return util::fail(label_, "axis %lld is repeated", (long long)axes[k]);
      seen[size_t(axis)] = true;
      if (steps[k] == 0) return util::fail(label_, "step of axis %lld is 0", (long long)axes[k]);
      int64_t dim = x.dim(size_t(axis)), s = starts[k], e = ends[k], st = steps[k];
      // Negative positions count from the end; then clamp to the range the
      // step direction can reach: [0, dim] forward, start [0, dim-1] and
      // end [-1, dim-1] backward (-1: up to and including element 0).
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
      } else {
        s = std::clamp<int64_t>(s, 0, std::max<int64_t>(dim - 1, 0));
        e = std::clamp<int64_t>(e, -1, dim - 1);
      }
      st = std::max(st, -INT64_MAX);  // so that -st exists
      int64_t span = st > 0 ? e - s : s - e;
      int64_t count = dim == 0 || span <= 0 ? 0 : 1 + (span - 1) / (st > 0 ? st : -st);
      start[size_t(axis)] = s;
      step[size_t(axis)] = st;
      out_dims[size_t(axis)] = std::max<int64_t>(0, count);
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    int64_t count = sdk::element_count(out_dims);
    if (count == 0) return nullptr;
    // The trailing dims taken whole form one contiguous block per position
    // of the dims before them.
    size_t full = rank;
    while (full > 0 && out_dims[full - 1] == x.dim(full - 1) && step[full - 1] == 1) --full;
    size_t esize = sdk::dtype_size(x.dtype);
    int64_t block = 1;
    for (size_t d = full; d < rank; ++d) block *= out_dims[d];
    if (full == 0) {
      util::parallel_copy(ctx, y.raw, x.raw, size_t(count) * esize);
      return nullptr;
    }
    std::vector<int64_t> strides = util::strides_of(x.dims);
    size_t last = full - 1;
    int64_t runs = out_dims[last], outer = count / (block * runs);
    size_t bytes = size_t(block) * esize;
    ctx.parallel_for(size_t(outer), std::max<size_t>(1, util::kGrain / size_t(block * runs)),
                     [&](size_t begin, size_t end) {
                       for (size_t o = begin; o < end; ++o) {
                         int64_t rest = int64_t(o), base = 0;
                         for (size_t d = last; d-- > 0;) {
                           base += (start[d] + rest % out_dims[d] * step[d]) * strides[d];
                           rest /= out_dims[d];
                         }
                         unsigned char* dst = static_cast<unsigned char*>(y.raw) + o * size_t(runs) * bytes;
                         for (int64_t j = 0; j < runs; ++j) {
                           int64_t src = base + (start[last] + j * step[last]) * strides[last];
                           std::memcpy(dst + size_t(j) * bytes,
                                       static_cast<const unsigned char*>(x.raw) + size_t(src) * esize, bytes);
                         }
                       }
                     });
    return nullptr;
  }

 private:
  std::string label_;
  bool from_attributes_;
  std::vector<int64_t> attr_starts_, attr_ends_, attr_axes_;
};

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

bool parse_mode(const std::string& s, PadMode* mode) {
  if (s == "constant") *mode = PadMode::kConstant;
  else if (s == "reflect") *mode = PadMode::kReflect;
  else if (s == "edge") *mode = PadMode::kEdge;
  else if (s == "wrap") *mode = PadMode::kWrap;
  else return false;
  return true;
}

// The bytes of `value` as one element of `dtype`.
void element_bytes(int32_t dtype, double value, unsigned char* out) {
  if (util::is_half(dtype)) {
    uint16_t bits = util::half_bits(dtype, float(value));
    std::memcpy(out, &bits, 2);
    return;
  }
  util::visit<util::kNumeric | util::kBool>(dtype, [&](auto tag) {
    using T = decltype(tag);
    T v = T(value);
    std::memcpy(out, &v, sizeof v);
  });
}

// n copies of one element of esize bytes at dst, by doubling copies.
void fill(unsigned char* dst, size_t n, const unsigned char* value, size_t esize) {
  if (n == 0) return;
  std::memcpy(dst, value, esize);
  for (size_t done = 1; done < n;) {
    const size_t more = std::min(done, n - done);
    std::memcpy(dst + done * esize, dst, more * esize);
    done += more;
  }
}

class PadKernel final : public sdk::Kernel {
 public:
  explicit PadKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        from_attributes_(node.opset < 11),
        attr_pads_(node.get_ints(node.opset < 2 ? "paddings" : "pads")),
        attr_value_(node.get_float("value", 0.0)) {
    parse_mode(node.get_string("mode", "constant"), &mode_);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    size_t rank = x.rank(), esize = sdk::dtype_size(x.dtype);
    std::vector<int64_t> pads = attr_pads_, axes;
    unsigned char value[16] = {};
    element_bytes(x.dtype, attr_value_, value);
    if (!from_attributes_) {
      bool present = false;
      std::string why;
      if (!shape::read_int_input(ctx, 1, &pads, &present, &why) || !present)
        return util::fail(label_, "%s", present ? why.c_str() : "input 1 (pads) is missing");
      if (auto v = ctx.input(2); v && v->size() > 0) {
        if (v->dtype != x.dtype)
          return util::fail(label_, "input 2 (constant_value) has type %s but input 0 has %s",
                            sdk::dtype_name(v->dtype), sdk::dtype_name(x.dtype));
        std::memcpy(value, v->raw, esize);
      }
      if (!shape::read_int_input(ctx, 3, &axes, &present, &why)) return util::fail(label_, "%s", why.c_str());
    }
    if (axes.empty())
      for (size_t d = 0; d < rank; ++d) axes.push_back(int64_t(d));
    if (pads.size() != 2 * axes.size())
      return util::fail(label_, "pads has %zu values; expected %zu (2 per padded axis)", pads.size(),
                        2 * axes.size());
    std::vector<int64_t> begin(rank, 0), end(rank, 0);
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t axis = 0;
      if (!util::normalize_axis(axes[k], int64_t(rank), &axis))
        return util::fail(label_, "axis %lld is out of range for input 0 of rank %zu", (long long)axes[k], rank);
      begin[size_t(axis)] = pads[k];
      end[size_t(axis)] = pads[k + axes.size()];
    }
    // Per dim: the source index of every output index, or -1 for padding.
    std::vector<int64_t> out_dims(rank);
    for (size_t d = 0; d < rank; ++d) {
      int64_t dim = x.dim(d);
      if (__builtin_add_overflow(dim, begin[d], &out_dims[d]) || __builtin_add_overflow(out_dims[d], end[d], &out_dims[d]))
        return util::fail(label_, "pads %s overflow axis %zu", util::dims_str(pads).c_str(), d);
      if (out_dims[d] < 0)
        return util::fail(label_, "pads %s crop more than the %lld elements of axis %zu",
                          util::dims_str(pads).c_str(), (long long)dim, d);
      if (dim == 0 && out_dims[d] > 0 && mode_ != PadMode::kConstant)
        return util::fail(label_, "cannot pad the empty axis %zu in this mode", d);
    }
    // The output first: the host refuses a size past the machine before the
    // maps below (one entry per output index of each axis) are built.
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    int64_t count = sdk::element_count(out_dims);
    if (count == 0) return nullptr;
    if (rank == 0) {
      std::memcpy(y.raw, x.raw, esize);
      return nullptr;
    }
    std::vector<std::vector<int64_t>> maps(rank);
    for (size_t d = 0; d < rank; ++d)
      for (int64_t i = 0; i < out_dims[d]; ++i) maps[d].push_back(source(i - begin[d], x.dim(d)));
    std::vector<int64_t> strides = util::strides_of(x.dims);
    int64_t row = out_dims[rank - 1], rows = count / row;
    const std::vector<int64_t>& last = maps[rank - 1];
    // Output positions [lo, hi) of a row copy one contiguous run of the
    // input's row; only the edges outside it go element by element.
    const int64_t lo = std::clamp<int64_t>(begin[rank - 1], 0, row);
    const int64_t hi = std::clamp<int64_t>(begin[rank - 1] + x.dim(rank - 1), lo, row);
    ctx.parallel_for(size_t(rows), std::max<size_t>(1, util::kGrain / size_t(row)), [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        int64_t rest = int64_t(r), src = 0;
        bool padding = false;
        for (size_t d = rank - 1; d-- > 0;) {
          int64_t s = maps[d][size_t(rest % out_dims[d])];
          rest /= out_dims[d];
          padding |= s < 0;
          src += s * strides[d];
        }
        unsigned char* dst = static_cast<unsigned char*>(y.raw) + r * size_t(row) * esize;
        if (padding) {  // a row of the constant; src may be negative: no pointer is formed from it
          fill(dst, size_t(row), value, esize);
          continue;
        }
        const unsigned char* from = static_cast<const unsigned char*>(x.raw) + size_t(src) * esize;
        auto element = [&](int64_t i) {
          const int64_t s = last[size_t(i)];
          std::memcpy(dst + size_t(i) * esize, s < 0 ? value : from + size_t(s) * esize, esize);
        };
        for (int64_t i = 0; i < lo; ++i) element(i);
        if (hi > lo)
          std::memcpy(dst + size_t(lo) * esize, from + size_t(lo - begin[rank - 1]) * esize, size_t(hi - lo) * esize);
        for (int64_t i = hi; i < row; ++i) element(i);
      }
    });
    return nullptr;
  }

 private:
  // Source index for position i (relative to the input) of an axis of size n.
  int64_t source(int64_t i, int64_t n) const {
    if (i >= 0 && i < n) return i;
    switch (mode_) {
      case PadMode::kConstant: return -1;
      case PadMode::kEdge: return std::clamp<int64_t>(i, 0, n - 1);
      case PadMode::kWrap: return ((i % n) + n) % n;
      case PadMode::kReflect: {
        if (n == 1) return 0;
        int64_t period = 2 * (n - 1), j = (i < 0 ? -i : i) % period;
        return j < n ? j : period - j;
      }
    }
    return -1;
  }

  std::string label_;
  bool from_attributes_;
  std::vector<int64_t> attr_pads_;
  double attr_value_;
  PadMode mode_ = PadMode::kConstant;
};

}  // namespace

void register_slice_pad_kernels(sdk::KernelRegistry& registry) {
  using shape::kIndexTypes;
  using shape::sized_input;
  // Slice: starts, ends, axes and steps are attributes before opset 10,
  // inputs from it on.
  registry.add(sdk::KernelDefBuilder("Slice").opsets(1, 9).inputs(1).check(sized_input(0)).create<SliceKernel>());
  registry.add(sdk::KernelDefBuilder("Slice")
                   .since(10)
                   .inputs(3, 5)
                   .input_types({1, 2, 3, 4}, kIndexTypes)
                   .check(sized_input(0))
                   .create<SliceKernel>());
  // Pad: pads and the constant value are attributes before opset 11.
  auto check_mode = [](const sdk::NodeInfo& node) {
    PadMode mode;
    std::string m = node.get_string("mode", "constant");
    return parse_mode(m, &mode) ? std::string() : "Pad: attribute mode is '" + m + "'; expected constant, reflect, edge or wrap";
  };
  registry.add(sdk::KernelDefBuilder("Pad")
                   .opsets(1, 10)
                   .inputs(1)
                   .check(sized_input(0))
                   .check(check_mode)
                   .create<PadKernel>());
  registry.add(sdk::KernelDefBuilder("Pad")
                   .since(11)
                   .inputs(2, 4)
                   .input_type(1, shape::kInt64)
                   .input_type(3, kIndexTypes)
                   .check(sized_input(0))
                   .check(check_mode)
                   .create<PadKernel>());
}

}  // namespace onyx::cpu
