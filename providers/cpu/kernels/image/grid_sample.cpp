// grid_sample.cpp: GridSample (opsets 16, 20, 22) in any number of spatial
// dims: nearest / linear / cubic, padding zeros / border / reflection,
// align_corners, following ONNX's reference (PyTorch's rules: nearest
// rounds half to even, as the node tests' data for 2-D and 3-D; out-of-range
// coordinates are clamped or reflected before sampling).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

enum class Padding { kZeros, kBorder, kReflection };

double reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t n = int64_t(dx / range);
    double r = dx - double(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t n = int64_t(dx / range);
    double r = dx - double(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

double cubic(double x) {
  const double a = -0.75;
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

class GridSampleKernel final : public sdk::Kernel {
 public:
  explicit GridSampleKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), align_(node.get_int("align_corners", 0) != 0) {
    std::string mode = node.get_string("mode", node.opset < 20 ? "bilinear" : "linear");
    mode_ = mode == "nearest" ? 0 : (mode == "bicubic" || mode == "cubic") ? 2 : 1;
    std::string pad = node.get_string("padding_mode", "zeros");
    padding_ = pad == "border" ? Padding::kBorder : pad == "reflection" ? Padding::kReflection : Padding::kZeros;
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), grid = ctx.in(1);
    const size_t r = x.rank() >= 2 ? x.rank() - 2 : 0;
    if (r == 0 || grid.rank() != r + 2 || grid.dim(0) != x.dim(0) || grid.dim(r + 1) != int64_t(r))
      return util::fail(label_, "X %s and grid %s do not fit ([N, C, D1..Dr] and [N, O1..Or, r])",
                        util::dims_str(x.dims).c_str(), util::dims_str(grid.dims).c_str());
    const int64_t n = x.dim(0), c = x.dim(1);
    std::vector<int64_t> in(x.dims.begin() + 2, x.dims.end()), y_dims{n, c};
    int64_t in_size = 1, out_size = 1;
    for (int64_t d : in) in_size *= d;
    for (size_t d = 0; d < r; ++d) y_dims.push_back(grid.dim(d + 1)), out_size *= grid.dim(d + 1);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, y_dims, &y));

    std::vector<double> pos(r);
    std::vector<std::vector<int64_t>> taps(r);
    std::vector<std::vector<double>> weights(r);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < out_size; ++o) {
        // Grid coordinates come innermost dim first (x, y, z).
        for (size_t d = 0; d < r; ++d) {
          double g = narrow::load(grid.dtype, grid.raw, (b * out_size + o) * int64_t(r) + int64_t(r - 1 - d));
          double len = double(in[d]);
          float v = float(align_ ? (g + 1) / 2.0 * (len - 1) : ((g + 1) * len - 1) / 2.0);
          pos[d] = v;
        }
        for (size_t d = 0; d < r; ++d) {
          double lo = align_ ? 0 : -0.5, hi = align_ ? double(in[d]) - 1 : double(in[d]) - 0.5;
          double v = pos[d];
          if (mode_ == 0) v = std::nearbyint(v);
          if (v < lo || v > hi) {
            if (padding_ == Padding::kBorder) v = std::clamp(v, 0.0, double(in[d]) - 1);
            else if (padding_ == Padding::kReflection) v = reflect(v, lo, hi);
          }
          taps[d].clear();
          weights[d].clear();
          if (mode_ == 0) {
            taps[d].push_back(int64_t(v));
            weights[d].push_back(1);
          } else {
            double f = std::floor(v), t = v - f;
            int64_t first = mode_ == 1 ? 0 : -1, count = mode_ == 1 ? 2 : 4;
            for (int64_t k = 0; k < count; ++k) {
              taps[d].push_back(int64_t(f) + first + k);
              weights[d].push_back(mode_ == 1 ? (k == 0 ? 1 - t : t) : cubic(t - double(first + k)));
            }
          }
        }
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t base = (b * c + ch) * in_size;
          narrow::store(y.dtype, y.raw, (b * c + ch) * out_size + o, sample(x, base, in, taps, weights), true);
        }
      }
    return nullptr;
  }

 private:
  // Sum over every combination of taps of the weights' product times the
  // pixel (0 outside the input for zeros padding).
  double sample(const sdk::Tensor& x, int64_t base, const std::vector<int64_t>& in,
                const std::vector<std::vector<int64_t>>& taps, const std::vector<std::vector<double>>& weights) const {
    const size_t r = in.size();
    std::vector<size_t> k(r, 0);
    double total = 0;
    while (true) {
      double w = 1;
      int64_t index = 0;
      bool zero = false;
      for (size_t d = 0; d < r; ++d) {
        w *= weights[d][k[d]];
        int64_t i = taps[d][k[d]], len = in[d];
        if (i < 0 || i >= len) {
          if (padding_ == Padding::kZeros) zero = true;
          else if (padding_ == Padding::kBorder) i = std::clamp<int64_t>(i, 0, len - 1);
          else i = std::clamp<int64_t>(int64_t(reflect(double(i), align_ ? 0 : -0.5, align_ ? double(len) - 1 : double(len) - 0.5)), 0, len - 1);
        }
        index = index * len + i;
      }
      if (!zero && w != 0) total += w * narrow::load(x.dtype, x.raw, base + index);
      size_t d = r;
      while (d-- > 0) {
        if (++k[d] < taps[d].size()) break;
        k[d] = 0;
      }
      if (d == size_t(-1)) break;
    }
    return total;
  }

  std::string label_;
  bool align_;
  int mode_;  // 0 nearest, 1 linear, 2 cubic
  Padding padding_;
};

}  // namespace

void register_grid_sample_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("GridSample")
                   .since(16)
                   .inputs(2)
                   .input_type(1, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .input_type(0, sdk::dtypes::kNumeric | sdk::dtypes::kHalf)
                   .create<GridSampleKernel>());
}

}  // namespace onyx::cpu
