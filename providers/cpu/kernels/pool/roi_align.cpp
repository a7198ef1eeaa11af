// roi_align.cpp: RoiAlign (opsets 10, 16): each region of interest is split
// into output_height x output_width bins, each bin sampled on a regular grid
// (sampling_ratio per side, or ceil(bin size) when 0) by bilinear
// interpolation; "avg" averages the samples, "max" takes the largest
// weighted corner of any sample (the rule ONNX's reference and ONNX Runtime
// share). half_pixel shifts coordinates by -0.5; output_half_pixel (the
// opset-10 behaviour) does not, and makes regions at least 1x1.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

class RoiAlignKernel final : public sdk::Kernel {
 public:
  explicit RoiAlignKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        half_pixel_(node.get_string("coordinate_transformation_mode", node.opset >= 16 ? "half_pixel" : "output_half_pixel") ==
                    "half_pixel"),
        max_(node.get_string("mode", "avg") == "max"),
        out_h_(node.get_int("output_height", 1)),
        out_w_(node.get_int("output_width", 1)),
        sampling_(node.get_int("sampling_ratio", 0)),
        scale_(node.get_float("spatial_scale", 1.0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), rois = ctx.in(1);
    std::vector<int64_t> batch;
    if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 || !util::read_ints(ctx.in(2), &batch) ||
        int64_t(batch.size()) != rois.dim(0))
      return util::fail(label_, "X %s, rois %s and batch_indices do not fit ([N, C, H, W], [R, 4], [R])",
                        util::dims_str(x.dims).c_str(), util::dims_str(rois.dims).c_str());
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), r = rois.dim(0);
    int64_t dims[4] = {r, c, out_h_, out_w_};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    const double offset = half_pixel_ ? 0.5 : 0.0;
    for (int64_t k = 0; k < r; ++k) {
      if (batch[size_t(k)] < 0 || batch[size_t(k)] >= n)
        return util::fail(label_, "batch index %" PRId64 " of roi %" PRId64 " is outside [0, %" PRId64 ")", batch[size_t(k)], k, n);
      double box[4];
      for (int j = 0; j < 4; ++j) box[j] = narrow::load(rois.dtype, rois.raw, k * 4 + j) * scale_ - offset;
      double roi_w = box[2] - box[0], roi_h = box[3] - box[1];
      if (!half_pixel_) roi_w = std::max(roi_w, 1.0), roi_h = std::max(roi_h, 1.0);
      const double bin_h = roi_h / double(out_h_), bin_w = roi_w / double(out_w_);
      const int64_t grid_h = sampling_ > 0 ? sampling_ : int64_t(std::ceil(roi_h / double(out_h_)));
      const int64_t grid_w = sampling_ > 0 ? sampling_ : int64_t(std::ceil(roi_w / double(out_w_)));
      const double count = double(std::max<int64_t>(grid_h * grid_w, 1));
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t plane = (batch[size_t(k)] * c + ch) * h * w;
        auto at = [&](int64_t yy, int64_t xx) { return narrow::load(x.dtype, x.raw, plane + yy * w + xx); };
        for (int64_t ph = 0; ph < out_h_; ++ph)
          for (int64_t pw = 0; pw < out_w_; ++pw) {
            double acc = max_ ? -INFINITY : 0.0;
            bool any = false;
            for (int64_t iy = 0; iy < grid_h; ++iy)
              for (int64_t ix = 0; ix < grid_w; ++ix) {
                double yy = box[1] + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / double(grid_h);
                double xx = box[0] + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / double(grid_w);
                double v[4] = {0, 0, 0, 0};
                if (!(yy < -1.0 || yy > double(h) || xx < -1.0 || xx > double(w))) {
                  yy = std::max(yy, 0.0), xx = std::max(xx, 0.0);
                  int64_t y0 = int64_t(yy), x0 = int64_t(xx), y1, x1;
                  if (y0 >= h - 1) y0 = y1 = h - 1, yy = double(y0);
                  else y1 = y0 + 1;
                  if (x0 >= w - 1) x0 = x1 = w - 1, xx = double(x0);
                  else x1 = x0 + 1;
                  double ly = yy - double(y0), lx = xx - double(x0), hy = 1 - ly, hx = 1 - lx;
                  v[0] = hy * hx * at(y0, x0), v[1] = hy * lx * at(y0, x1), v[2] = ly * hx * at(y1, x0), v[3] = ly * lx * at(y1, x1);
                }
                any = true;
                if (max_) acc = std::max({acc, v[0], v[1], v[2], v[3]});
                else acc += v[0] + v[1] + v[2] + v[3];
              }
            double out = max_ ? (any ? acc : 0.0) : acc / count;
            narrow::store(y.dtype, y.raw, ((k * c + ch) * out_h_ + ph) * out_w_ + pw, out, true);
          }
      }
    }
    return nullptr;
  }

 private:
  std::string label_;
  bool half_pixel_, max_;
  int64_t out_h_, out_w_, sampling_;
  double scale_;
};

}  // namespace

void register_roi_align_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("RoiAlign").since(10).inputs(3).input_types({0, 1}, sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<RoiAlignKernel>());
}

}  // namespace onyx::cpu
