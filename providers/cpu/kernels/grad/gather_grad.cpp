// gather_grad.cpp: scatter-backs for ops that read parts of their input.
//   GatherGrad(dY, indices, shape of data) attr axis: dX[.., indices[j], ..] += dY[.., j, ..]
//   SliceGrad(dY, shape of data, starts, ends, axes?, steps?): dY placed at
//   the sliced positions of zeros of data's shape (ONNX Slice's clamping).
#include <cinttypes>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

class GatherGradKernel final : public sdk::Kernel {
 public:
  explicit GatherGradKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axis_(node.get_int("axis", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0), idx = ctx.in(1);
    std::vector<int64_t> shape, indices;
    if (!util::read_ints(ctx.in(2), &shape) || !util::read_ints(idx, &indices))
      return util::fail(label_, "indices and shape must be int32/int64");
    int64_t axis = 0;
    if (!util::normalize_axis(axis_, int64_t(shape.size()), &axis))
      return util::fail(label_, "axis %" PRId64 " is out of range for rank %zu", axis_, shape.size());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
    const int64_t rows = shape[size_t(axis)], count = int64_t(indices.size());
    if (dy.size() != outer * count * inner)
      return util::fail(label_, "output gradient %s does not match data %s gathered by %" PRId64 " indices",
                        util::dims_str(dy.dims).c_str(), util::dims_str(shape).c_str(), count);
    for (int64_t& i : indices) {
      if (i < -rows || i >= rows)
        return util::fail(label_, "index %" PRId64 " is out of range for axis of size %" PRId64, i, rows);
      if (i < 0) i += rows;
    }
    sdk::Tensor dx;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dy.dtype, shape, &dx));
    if (dy.dtype == ONYX_DTYPE_FLOAT64) run<double>(dy, dx, indices, outer, rows, inner);
    else run<float>(dy, dx, indices, outer, rows, inner);
    return nullptr;
  }

 private:
  template <typename T>
  static void run(const sdk::Tensor& dy, const sdk::Tensor& dx, const std::vector<int64_t>& indices,
                  int64_t outer, int64_t rows, int64_t inner) {
    T* out = dx.data<T>();
    const T* g = dy.data<T>();
    std::fill(out, out + dx.size(), T(0));
    const int64_t count = int64_t(indices.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < count; ++j) {
        T* row = out + (o * rows + indices[size_t(j)]) * inner;
        const T* src = g + (o * count + j) * inner;
        for (int64_t i = 0; i < inner; ++i) row[i] += src[i];
      }
  }
  std::string label_;
  int64_t axis_;
};

class SliceGradKernel final : public sdk::Kernel {
 public:
  explicit SliceGradKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0);
    std::vector<int64_t> shape, starts, ends, axes, steps;
    if (!util::read_ints(ctx.in(1), &shape) || !util::read_ints(ctx.in(2), &starts) ||
        !util::read_ints(ctx.in(3), &ends))
      return util::fail(label_, "shape, starts and ends must be int32/int64");
    const int64_t rank = int64_t(shape.size());
    if (auto t = ctx.input(4); t && !util::read_ints(*t, &axes)) return util::fail(label_, "axes must be int32/int64");
    if (auto t = ctx.input(5); t && !util::read_ints(*t, &steps)) return util::fail(label_, "steps must be int32/int64");
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      return util::fail(label_, "starts, ends, axes and steps must have one length");
    // Per dim: first index and step (untouched dims: 0 and 1).
    std::vector<int64_t> first(size_t(rank), 0), step(size_t(rank), 1), count(shape);
    for (size_t k = 0; k < starts.size(); ++k) {
      int64_t a = 0;
      if (!util::normalize_axis(axes[k], rank, &a)) return util::fail(label_, "axis %" PRId64 " is out of range", axes[k]);
      const int64_t d = shape[size_t(a)], s = steps[k];
      if (s == 0) return util::fail(label_, "step 0 on axis %" PRId64, a);
      int64_t b = starts[k] < 0 ? starts[k] + d : starts[k], e = ends[k] < 0 ? ends[k] + d : ends[k];
      if (s > 0) {
        b = std::clamp<int64_t>(b, 0, d);
        e = std::clamp<int64_t>(e, 0, d);
      } else {
        b = std::clamp<int64_t>(b, 0, d - 1);
        e = std::clamp<int64_t>(e, -1, d - 1);
      }
      first[size_t(a)] = b;
      step[size_t(a)] = s;
      count[size_t(a)] = s > 0 ? std::max<int64_t>(0, (e - b + s - 1) / s) : std::max<int64_t>(0, (b - e - s - 1) / -s);
    }
    if (dy.shape() != count)
      return util::fail(label_, "output gradient %s does not match the slice's shape %s", util::dims_str(dy.dims).c_str(),
                        util::dims_str(count).c_str());
    sdk::Tensor dx;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dy.dtype, shape, &dx));
    if (dy.dtype == ONYX_DTYPE_FLOAT64) run<double>(dy, dx, shape, first, step, count);
    else run<float>(dy, dx, shape, first, step, count);
    return nullptr;
  }

 private:
  template <typename T>
  static void run(const sdk::Tensor& dy, const sdk::Tensor& dx, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& first, const std::vector<int64_t>& step,
                  const std::vector<int64_t>& count) {
    T* out = dx.data<T>();
    std::fill(out, out + dx.size(), T(0));
    if (dy.size() == 0) return;
    const size_t rank = shape.size();
    std::vector<int64_t> stride(rank, 1), index(rank, 0);
    for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * shape[d];
    for (int64_t i = 0; i < dy.size(); ++i) {
      int64_t at = 0;
      for (size_t d = 0; d < rank; ++d) at += (first[d] + index[d] * step[d]) * stride[d];
      out[at] = dy.data<T>()[i];
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < count[d]) break;
        index[d] = 0;
      }
    }
  }
  std::string label_;
};

}  // namespace

void register_gather_grad_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("GatherGrad", kOnyxDomain)
                   .inputs(3)
                   .input_type(0, sdk::dtypes::kFloat)
                   .create<GatherGradKernel>());
  registry.add(sdk::KernelDefBuilder("SliceGrad", kOnyxDomain)
                   .inputs(4, 6)
                   .input_type(0, sdk::dtypes::kFloat)
                   .create<SliceGradKernel>());
}

}  // namespace onyx::cpu
