// nn_util.cpp: the helpers of nn_util.h.
#include "kernels/nn_util.h"

#include <algorithm>

namespace onyx::cpu::nn {

double element_as_double(const sdk::Tensor& t, int64_t k) {
  return t.dtype == ONYX_DTYPE_FLOAT64 ? t.data<double>()[k] : double(t.data<float>()[k]);
}

ParallelFor host_parallel_for(sdk::ComputeContext& ctx) {
  ParallelFor pf;
  pf.threads = ctx.thread_count();
  if (pf.threads > 1)
    pf.run = [&ctx](size_t n, const std::function<void(size_t, size_t)>& body) {
      // The GEMM hands out chunks sized for its own tiles: grain 1.
      ctx.parallel_for(n, 1, [&body](size_t lo, size_t hi) { body(lo, hi); });
    };
  return pf;
}

ParallelFor serial_parallel_for() { return {}; }  // no run function: inline, serial

size_t grain_for(double work_per_item, double target_work) {
  double g = target_work / std::max(work_per_item, 1.0);
  return g < 1 ? 1 : size_t(g);
}

// ---------------------------------------------------------------------------
// Sliding windows
// ---------------------------------------------------------------------------

WindowAttrs WindowAttrs::read(const sdk::NodeInfo& node) {
  WindowAttrs a;
  a.auto_pad = node.get_string("auto_pad", "NOTSET");
  if (a.auto_pad.empty()) a.auto_pad = "NOTSET";
  a.kernel_shape = node.get_ints("kernel_shape");
  a.strides = node.get_ints("strides");
  a.dilations = node.get_ints("dilations");
  a.pads = node.get_ints("pads");
  a.ceil_mode = node.get_int("ceil_mode", 0) != 0;
  return a;
}

std::string WindowAttrs::check(size_t spatial) const {
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID")
    return "unknown auto_pad '" + auto_pad + "'";
  for (int64_t v : kernel_shape)
    if (v <= 0) return "kernel_shape " + dims_str(kernel_shape) + " has a non-positive entry";
  for (int64_t v : strides)
    if (v <= 0) return "strides " + dims_str(strides) + " has a non-positive entry";
  for (int64_t v : dilations)
    if (v <= 0) return "dilations " + dims_str(dilations) + " has a non-positive entry";
  for (int64_t v : pads)
    if (v < 0) return "pads " + dims_str(pads) + " has a negative entry";
  if (pads.size() % 2) return "pads " + dims_str(pads) + " has an odd number of entries";
  if (spatial == 0) return {};
  auto sized = [&](const std::vector<int64_t>& v, size_t want, const char* what) -> std::string {
    if (v.empty() || v.size() == want) return {};
    return std::string(what) + " has " + std::to_string(v.size()) + " entries, expected " +
           std::to_string(want) + " for " + std::to_string(spatial) + " spatial dims";
  };
  for (const std::string& e :
       {sized(kernel_shape, spatial, "kernel_shape"), sized(strides, spatial, "strides"),
        sized(dilations, spatial, "dilations"), sized(pads, 2 * spatial, "pads")})
    if (!e.empty()) return e;
  return {};
}

std::string resolve_forward(const WindowAttrs& attrs, std::span<const int64_t> in,
                            std::span<const int64_t> kernel, std::vector<WindowDim>* dims) {
  size_t n = in.size();
  if (std::string e = attrs.check(n); !e.empty()) return e;
  if (kernel.size() != n)
    return "kernel has " + std::to_string(kernel.size()) + " spatial dims, input has " +
           std::to_string(n);
  dims->assign(n, WindowDim{});
  bool same = attrs.auto_pad == "SAME_UPPER" || attrs.auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < n; ++i) {
    WindowDim& d = (*dims)[i];
    d.in = in[i];
    d.kernel = kernel[i];
    d.stride = attrs.strides.empty() ? 1 : attrs.strides[i];
    d.dilation = attrs.dilations.empty() ? 1 : attrs.dilations[i];
    if (same) {
      d.out = (d.in + d.stride - 1) / d.stride;
      int64_t total = std::max<int64_t>(0, (d.out - 1) * d.stride + d.extent() - d.in);
      d.pad_begin = attrs.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      d.pad_end = total - d.pad_begin;
      continue;
    }
    if (attrs.auto_pad == "NOTSET" && !attrs.pads.empty()) {
      d.pad_begin = attrs.pads[i];
      d.pad_end = attrs.pads[i + n];
    }
    int64_t span = d.in + d.pad_begin + d.pad_end - d.extent();
    if (span < 0)
      return "spatial dim " + std::to_string(i) + ": window extent " + std::to_string(d.extent()) +
             " exceeds the padded input size " + std::to_string(d.in + d.pad_begin + d.pad_end);
    if (attrs.ceil_mode) {
      d.out = (span + d.stride - 1) / d.stride + 1;
      // A window starting past the input and begin padding covers only end padding.
      if ((d.out - 1) * d.stride >= d.in + d.pad_begin) --d.out;
    } else {
      d.out = span / d.stride + 1;
    }
  }
  return {};
}

IndexRange index_range(int64_t start, int64_t step, int64_t count, int64_t lo, int64_t hi) {
  // ceil((v - start) / step) for either sign of the numerator.
  auto first_at_or_above = [&](int64_t v) {
    int64_t num = v - start;
    return num >= 0 ? (num + step - 1) / step : -((-num) / step);
  };
  int64_t first = std::clamp<int64_t>(first_at_or_above(lo), 0, count);
  int64_t last = std::clamp<int64_t>(first_at_or_above(hi), 0, count);
  return {first, std::max(first, last)};
}

void lift_to_3d(std::vector<WindowDim>* dims) {
  while (dims->size() < 3) dims->insert(dims->begin(), WindowDim{});
}

}  // namespace onyx::cpu::nn
