// resize.cpp: Resize (opsets 10-19) and Upsample (opsets 7-9), nearest /
// linear / cubic in any number of dims, every coordinate transformation
// mode, nearest_mode, exclude_outside, antialias, axes and
// keep_aspect_ratio_policy, following ONNX's reference implementation.
//
// Interpolation is separable: one 1-D pass per axis, from the last axis to
// the first (the reference's order, which matters only for
// tf_crop_and_resize's extrapolation value), in double. Each output
// position x maps to x_in in the input; with b = floor(x_in) (or x_in - 1
// when x_in is an integer) and r = x_in - b in (0, 1], the n taps are the
// inputs b + 1 - n/2 ... b + n/2, clamped to the edge.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

struct ResizeAttrs {
  std::string mode = "nearest", transform = "half_pixel", nearest_mode = "round_prefer_floor",
              aspect = "stretch";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
  std::vector<int64_t> axes;
};

// One axis: sizes, scale and the tf_crop_and_resize region.
struct AxisPlan {
  int64_t in = 1, out = 1;
  double scale = 1, roi_start = 0, roi_end = 1;
};

double to_input_coordinate(const ResizeAttrs& a, const AxisPlan& p, int64_t x, bool* outside) {
  const double in = double(p.in), out_f = p.scale * in, xo = double(x);
  const std::string& t = a.transform;
  if (t == "align_corners") return out_f == 1 ? 0.0 : xo * (in - 1) / (out_f - 1);
  if (t == "asymmetric") return xo / p.scale;
  if (t == "tf_crop_and_resize") {
    double v = out_f == 1 ? (p.roi_end - p.roi_start) * (in - 1) / 2
                          : xo * (p.roi_end - p.roi_start) * (in - 1) / (out_f - 1);
    v += p.roi_start * (in - 1);
    *outside = v < 0 || v > in - 1;
    return v;
  }
  if (t == "pytorch_half_pixel") return out_f == 1 ? -0.5 : (xo + 0.5) / p.scale - 0.5;
  if (t == "tf_half_pixel_for_nn") return (xo + 0.5) / p.scale;  // Resize-11 only
  if (t == "half_pixel_symmetric") {
    double adjustment = double(p.out) / out_f, offset = in / 2 * (1 - adjustment);
    return offset + (xo + 0.5) / p.scale - 0.5;
  }
  return (xo + 0.5) / p.scale - 0.5;  // half_pixel
}

double cubic_weight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Weights of the taps b + first ... for ratio r (see the file comment).
void tap_weights(const ResizeAttrs& a, double r, double scale, std::vector<double>* w, int64_t* first) {
  w->clear();
  if (a.mode == "nearest") {
    bool upper;
    if (r == 1) upper = true;  // x_in is an integer
    else if (a.nearest_mode == "round_prefer_ceil") upper = r >= 0.5;
    else if (a.nearest_mode == "floor") upper = false;
    else if (a.nearest_mode == "ceil") upper = true;
    else upper = r > 0.5;  // round_prefer_floor
    *w = {upper ? 0.0 : 1.0, upper ? 1.0 : 0.0};
    *first = 0;
    return;
  }
  const bool cubic = a.mode == "cubic";
  const double s = a.antialias ? std::min(scale, 1.0) : 1.0;
  // Taps within the (scaled) filter support: 1 for linear, 2 for cubic.
  int64_t start = int64_t(std::floor(-(cubic ? 2.0 : 1.0) / s) + 1);
  int64_t count = 2 - 2 * start;
  double sum = 0;
  for (int64_t k = 0; k < count; ++k) {
    double arg = (double(start + k) - r) * s;
    double v = cubic ? cubic_weight(arg, a.cubic_a) : std::clamp(1 - std::fabs(arg), 0.0, 1.0);
    w->push_back(v);
    sum += v;
  }
  if (a.antialias)
    for (double& v : *w) v /= sum;
  *first = start;
}

// Resizes `data` (dims `dims`) along `axis` in place of a new buffer.
void resize_axis(const ResizeAttrs& a, const AxisPlan& p, size_t axis, std::vector<int64_t>* dims,
                 std::vector<double>* data) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dims->size(); ++d)
    if (d < axis) outer *= (*dims)[d];
    else if (d > axis) inner *= (*dims)[d];
  std::vector<double> out(size_t(outer * p.out * inner));
  std::vector<double> w;
  std::vector<int64_t> taps;
  for (int64_t x = 0; x < p.out; ++x) {
    bool outside = false;
    double xi = to_input_coordinate(a, p, x, &outside);
    double b = std::floor(xi), r = xi - b;
    if (r == 0) b -= 1, r = 1;
    int64_t first = 0;
    tap_weights(a, r, p.scale, &w, &first);
    taps.assign(w.size(), 0);
    double kept = 0;
    for (size_t k = 0; k < w.size(); ++k) {
      int64_t idx = int64_t(b) + first + int64_t(k);
      if (a.exclude_outside && (idx < 0 || idx >= p.in)) w[k] = 0;
      kept += w[k];
      taps[k] = std::clamp<int64_t>(idx, 0, p.in - 1);
    }
    if (a.exclude_outside && kept != 0)
      for (double& v : w) v /= kept;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double v = a.extrapolation;
        if (!outside) {
          v = 0;
          for (size_t k = 0; k < w.size(); ++k)
            if (w[k] != 0) v += w[k] * (*data)[size_t((o * p.in + taps[k]) * inner + i)];
        }
        out[size_t((o * p.out + x) * inner + i)] = v;
      }
  }
  (*dims)[axis] = p.out;
  data->swap(out);
}

bool read_floats(const sdk::Tensor& t, std::vector<double>* out) {
  out->clear();
  if (!util::in_set(t.dtype, util::kFloat | util::kHalf)) return false;
  for (int64_t i = 0; i < t.size(); ++i) out->push_back(narrow::load(t.dtype, t.raw, i));
  return true;
}

class ResizeKernel final : public sdk::Kernel {
 public:
  ResizeKernel(const sdk::NodeInfo& node, bool upsample) : label_(util::node_label(node)) {
    a_.mode = node.get_string("mode", "nearest");
    if (a_.mode == "bilinear" || a_.mode == "trilinear") a_.mode = "linear";  // Upsample-7 spellings
    if (upsample || node.opset < 11) {
      // Upsample and Resize-10: asymmetric coordinates, nearest rounds down.
      a_.transform = "asymmetric";
      a_.nearest_mode = "floor";
      scales_attr_ = node.get_floats("scales");
      scales_input_ = upsample ? (node.opset >= 9 ? 1 : -1) : 1;
      return;
    }
    a_.transform = node.get_string("coordinate_transformation_mode", "half_pixel");
    a_.nearest_mode = node.get_string("nearest_mode", "round_prefer_floor");
    a_.aspect = node.get_string("keep_aspect_ratio_policy", "stretch");
    a_.cubic_a = node.get_float("cubic_coeff_a", -0.75);
    a_.extrapolation = node.get_float("extrapolation_value", 0);
    a_.exclude_outside = node.get_int("exclude_outside", 0) != 0;
    a_.antialias = node.get_int("antialias", 0) != 0;
    a_.axes = node.get_ints("axes");
    roi_input_ = 1, scales_input_ = 2, sizes_input_ = 3;
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    const size_t rank = x.rank();
    std::vector<int64_t> axes = a_.axes;
    if (axes.empty())
      for (size_t d = 0; d < rank; ++d) axes.push_back(int64_t(d));
    for (int64_t& axis : axes)
      if (!util::normalize_axis(axis, int64_t(rank), &axis))
        return util::fail(label_, "axes has a value out of range for rank %zu", rank);

    std::vector<double> scales, roi;
    std::vector<int64_t> sizes;
    if (scales_input_ < 0) scales.assign(scales_attr_.begin(), scales_attr_.end());
    else if (auto t = ctx.input(size_t(scales_input_)); t && t->size() > 0 && !read_floats(*t, &scales))
      return util::fail(label_, "scales must be a float tensor");
    if (sizes_input_ > 0)
      if (auto t = ctx.input(size_t(sizes_input_)); t && t->size() > 0 && !util::read_ints(*t, &sizes))
        return util::fail(label_, "sizes must be int64");
    if (roi_input_ > 0)
      if (auto t = ctx.input(size_t(roi_input_)); t && t->size() > 0 && !read_floats(*t, &roi))
        return util::fail(label_, "roi must be a float tensor");
    if (scales.empty() == sizes.empty())
      return util::fail(label_, "exactly one of scales and sizes must be given");
    const size_t given = scales.empty() ? sizes.size() : scales.size();
    if (given != axes.size())
      return util::fail(label_, "%zu scales/sizes for %zu axes", given, axes.size());
    if (!roi.empty() && roi.size() != 2 * axes.size())
      return util::fail(label_, "roi has %zu values; expected %zu", roi.size(), 2 * axes.size());

    std::vector<AxisPlan> plan(rank);
    for (size_t d = 0; d < rank; ++d) plan[d].in = plan[d].out = x.dim(d);
    for (size_t k = 0; k < axes.size(); ++k) {
      AxisPlan& p = plan[size_t(axes[k])];
      if (!roi.empty()) p.roi_start = roi[k], p.roi_end = roi[axes.size() + k];
      if (!scales.empty()) {
        if (scales[k] <= 0) return util::fail(label_, "scale %g is not positive", scales[k]);
        p.scale = scales[k];
        p.out = int64_t(p.scale * double(p.in));
      } else {
        p.out = sizes[k];
        p.scale = p.in ? double(p.out) / double(p.in) : 1.0;
      }
    }
    if (!sizes.empty() && a_.aspect != "stretch") {
      double s = a_.aspect == "not_larger" ? INFINITY : 0;
      for (int64_t axis : axes)
        s = a_.aspect == "not_larger" ? std::min(s, plan[size_t(axis)].scale) : std::max(s, plan[size_t(axis)].scale);
      for (int64_t axis : axes) {
        AxisPlan& p = plan[size_t(axis)];
        p.scale = s;
        p.out = int64_t(s * double(p.in) + 0.5);
      }
    }

    std::vector<int64_t> dims(x.dims.begin(), x.dims.end());
    std::vector<double> data(size_t(x.size()));
    for (int64_t i = 0; i < x.size(); ++i) data[size_t(i)] = narrow::load(x.dtype, x.raw, i);
    for (size_t d = rank; d-- > 0;) {
      const AxisPlan& p = plan[d];
      bool identity = p.in == p.out && p.scale == 1 && a_.transform != "tf_crop_and_resize";
      if (!identity) resize_axis(a_, p, d, &dims, &data);
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    // (Integer types truncate, as the reference's astype.)
    for (size_t i = 0; i < data.size(); ++i) narrow::store(y.dtype, y.raw, int64_t(i), data[i], true);
    return nullptr;
  }

 private:
  std::string label_;
  ResizeAttrs a_;
  std::vector<float> scales_attr_;
  int roi_input_ = -1, scales_input_ = -1, sizes_input_ = -1;
};

std::string check_resize_attrs(const sdk::NodeInfo& node) {
  std::string mode = node.get_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic" && mode != "bilinear" && mode != "trilinear")
    return "mode '" + mode + "' is not nearest, linear or cubic";
  static const char* const kTransforms[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                            "align_corners", "asymmetric", "tf_crop_and_resize",
                                            "tf_half_pixel_for_nn"};
  std::string transform = node.get_string("coordinate_transformation_mode", "half_pixel");
  if (std::find(std::begin(kTransforms), std::end(kTransforms), transform) == std::end(kTransforms))
    return "coordinate_transformation_mode '" + transform + "' is not one the spec defines";
  return {};
}

}  // namespace

void register_resize_kernels(sdk::KernelRegistry& registry) {
  for (bool upsample : {false, true})
    registry.add(sdk::KernelDefBuilder(upsample ? "Upsample" : "Resize")
                     .since(upsample ? 7 : 10)
                     .input_type(0, sdk::dtypes::kNumeric | sdk::dtypes::kHalf)
                     .check(check_resize_attrs)
                     .create([upsample](const sdk::NodeInfo& node) {
                       return std::make_unique<ResizeKernel>(node, upsample);
                     }));
}

}  // namespace onyx::cpu
