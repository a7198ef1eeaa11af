// spectral.cpp: DFT (opsets 17, 20), STFT (17), the Hann, Hamming and
// Blackman windows (17) and MelWeightMatrix (17). Transforms are direct O(n^2) sums in double (the
// sizes these ops see in models are small; exact sums keep float64
// accuracy).
#include <cinttypes>
#include <cmath>
#include <numbers>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// out[k] = scale * sum_n in[n] * exp(sign * 2 pi i k n / length), k < count.
void dft(const std::vector<double>& re, const std::vector<double>& im, int64_t length, int64_t count, bool inverse,
         std::vector<double>* out_re, std::vector<double>* out_im) {
  const double sign = inverse ? 1 : -1, scale = inverse ? 1.0 / double(length) : 1.0;
  out_re->assign(size_t(count), 0);
  out_im->assign(size_t(count), 0);
  for (int64_t k = 0; k < count; ++k) {
    double sr = 0, si = 0;
    for (int64_t n = 0; n < length; ++n) {
      double angle = sign * 2 * std::numbers::pi * double((k * n) % length) / double(length);
      double c = std::cos(angle), s = std::sin(angle);
      sr += re[size_t(n)] * c - im[size_t(n)] * s;
      si += re[size_t(n)] * s + im[size_t(n)] * c;
    }
    (*out_re)[size_t(k)] = sr * scale;
    (*out_im)[size_t(k)] = si * scale;
  }
}

class DftKernel final : public sdk::Kernel {
 public:
  explicit DftKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        opset_(node.opset),
        axis_attr_(node.get_int("axis", 1)),
        inverse_(node.get_int("inverse", 0) != 0),
        onesided_(node.get_int("onesided", 0) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    const int64_t rank = int64_t(x.rank());
    if (rank < 2 || (x.dim(size_t(rank - 1)) != 1 && x.dim(size_t(rank - 1)) != 2))
      return util::fail(label_, "input %s must end in a dim of 1 (real) or 2 (complex)", util::dims_str(x.dims).c_str());
    const bool complex_in = x.dim(size_t(rank - 1)) == 2;
    int64_t axis = axis_attr_;
    if (opset_ >= 20) {
      axis = -2;
      std::vector<int64_t> a;
      if (auto t = ctx.input(2); t && t->size() > 0) {
        if (!util::read_ints(*t, &a) || a.size() != 1) return util::fail(label_, "axis (input 2) must be an integer scalar");
        axis = a[0];
      }
    }
    // The axis counts the signal dims (all but the last).
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank - 1) return util::fail(label_, "axis %" PRId64 " is out of range", axis_attr_);
    int64_t n = x.dim(size_t(axis)), length = n;
    if (auto t = ctx.input(1); t && t->size() > 0) {
      std::vector<int64_t> v;
      if (!util::read_ints(*t, &v) || v.size() != 1 || v[0] <= 0)
        return util::fail(label_, "dft_length must be a positive integer scalar");
      length = v[0];
    } else if (inverse_ && onesided_) {
      length = 2 * (n - 1);  // the input is the half spectrum of a real signal
    }
    // Inverse and one-sided: the input holds bins 0..length/2 of a Hermitian
    // spectrum and the output is the real signal (irfft).
    const bool irfft = inverse_ && onesided_;
    const int64_t count = irfft ? length : onesided_ ? length / 2 + 1 : length;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
    for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.dim(size_t(d));
    std::vector<int64_t> dims(x.dims.begin(), x.dims.end());
    dims[size_t(axis)] = count;
    dims.back() = irfft ? 1 : 2;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    const int64_t parts = complex_in ? 2 : 1;
    std::vector<double> re(static_cast<size_t>(length)), im(static_cast<size_t>(length)), out_re, out_im;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t k = 0; k < length; ++k) {
          // irfft: bins above length/2 mirror the lower ones, conjugated.
          int64_t src = irfft && k > length / 2 ? length - k : k;
          bool inside = src < n;
          int64_t at = ((o * n + src) * inner + i) * parts;
          re[size_t(k)] = inside ? narrow::load(x.dtype, x.raw, at) : 0.0;
          im[size_t(k)] = inside && complex_in ? narrow::load(x.dtype, x.raw, at + 1) : 0.0;
          if (src != k) im[size_t(k)] = -im[size_t(k)];
        }
        dft(re, im, length, count, inverse_, &out_re, &out_im);
        for (int64_t k = 0; k < count; ++k) {
          int64_t at = ((o * count + k) * inner + i) * (irfft ? 1 : 2);
          narrow::store(y.dtype, y.raw, at, out_re[size_t(k)], true);
          if (!irfft) narrow::store(y.dtype, y.raw, at + 1, out_im[size_t(k)], true);
        }
      }
    return nullptr;
  }

 private:
  std::string label_;
  int64_t opset_, axis_attr_;
  bool inverse_, onesided_;
};

// STFT: signal [batch, length, 1|2] framed by frame_step, each frame times
// the window, transformed: [batch, frames, bins, 2].
class StftKernel final : public sdk::Kernel {
 public:
  explicit StftKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), onesided_(node.get_int("onesided", 1) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> step_v, len_v;
    if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
      return util::fail(label_, "signal %s must be [batch, length, 1 or 2]", util::dims_str(x.dims).c_str());
    if (!util::read_ints(ctx.in(1), &step_v) || step_v.size() != 1 || step_v[0] <= 0)
      return util::fail(label_, "frame_step must be a positive integer scalar");
    std::optional<sdk::Tensor> window = ctx.input(2), frame_len = ctx.input(3);
    int64_t frame = window ? window->size() : 0;
    if (frame_len) {
      if (!util::read_ints(*frame_len, &len_v) || len_v.size() != 1) return util::fail(label_, "frame_length must be an integer scalar");
      frame = len_v[0];
    }
    if (frame <= 0 || frame > x.dim(1) || (window && window->size() != frame))
      return util::fail(label_, "frame length %" PRId64 " does not fit the signal and window", frame);
    const int64_t batch = x.dim(0), length = x.dim(1), parts = x.dim(2), step = step_v[0];
    const int64_t frames = (length - frame) / step + 1, bins = onesided_ ? frame / 2 + 1 : frame;
    int64_t dims[4] = {batch, frames, bins, 2};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    std::vector<double> re(static_cast<size_t>(frame)), im(static_cast<size_t>(frame)), out_re, out_im;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t k = 0; k < frame; ++k) {
          double w = window ? narrow::load(window->dtype, window->raw, k) : 1.0;
          int64_t at = (b * length + f * step + k) * parts;
          re[size_t(k)] = w * narrow::load(x.dtype, x.raw, at);
          im[size_t(k)] = parts == 2 ? w * narrow::load(x.dtype, x.raw, at + 1) : 0.0;
        }
        dft(re, im, frame, bins, false, &out_re, &out_im);
        for (int64_t k = 0; k < bins; ++k) {
          int64_t at = ((b * frames + f) * bins + k) * 2;
          narrow::store(y.dtype, y.raw, at, out_re[size_t(k)], true);
          narrow::store(y.dtype, y.raw, at + 1, out_im[size_t(k)], true);
        }
      }
    return nullptr;
  }

 private:
  std::string label_;
  bool onesided_;
};

enum class Window { kHann, kHamming, kBlackman };

class WindowKernel final : public sdk::Kernel {
 public:
  WindowKernel(const sdk::NodeInfo& node, Window kind)
      : label_(util::node_label(node)),
        kind_(kind),
        dtype_(int32_t(node.get_int("output_datatype", ONYX_DTYPE_FLOAT32))),
        periodic_(node.get_int("periodic", 1) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    std::vector<int64_t> size;
    if (!util::read_ints(ctx.in(0), &size) || size.size() != 1 || size[0] < 0)
      return util::fail(label_, "size must be a non-negative integer scalar");
    const int64_t n = size[0];
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dtype_, std::span<const int64_t>(&n, 1), &y));
    const double den = double(periodic_ ? n : n - 1), tau = 2 * std::numbers::pi;
    for (int64_t k = 0; k < n; ++k) {
      double a = den > 0 ? tau * double(k) / den : 0, v;
      if (kind_ == Window::kHann) v = 0.5 - 0.5 * std::cos(a);
      else if (kind_ == Window::kHamming) v = 25.0 / 46 - 21.0 / 46 * std::cos(a);
      else v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
      narrow::store(dtype_, y.raw, k, v, true);
    }
    return nullptr;
  }

 private:
  std::string label_;
  Window kind_;
  int32_t dtype_;
  bool periodic_;
};

// MelWeightMatrix: triangular filters [dft_length / 2 + 1, num_mel_bins]
// between mel-spaced bin edges (ONNX's reference: edges rounded down to
// whole spectrogram bins).
class MelKernel final : public sdk::Kernel {
 public:
  explicit MelKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), dtype_(int32_t(node.get_int("output_datatype", ONYX_DTYPE_FLOAT32))) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    std::vector<int64_t> mel_v, dft_v, rate_v;
    if (!util::read_ints(ctx.in(0), &mel_v) || !util::read_ints(ctx.in(1), &dft_v) || !util::read_ints(ctx.in(2), &rate_v) ||
        mel_v.size() != 1 || dft_v.size() != 1 || rate_v.size() != 1 || mel_v[0] < 1 || dft_v[0] < 1 || rate_v[0] < 1)
      return util::fail(label_, "num_mel_bins, dft_length and sample_rate must be positive integer scalars");
    sdk::Tensor lo_t = ctx.in(3), hi_t = ctx.in(4);
    const int64_t mels = mel_v[0], dft = dft_v[0], bins = dft / 2 + 1;
    const double lo = narrow::load(lo_t.dtype, lo_t.raw, 0), hi = narrow::load(hi_t.dtype, hi_t.raw, 0);
    const double lo_mel = 2595 * std::log10(1 + lo / 700), hi_mel = 2595 * std::log10(1 + hi / 700);
    const double step = (hi_mel - lo_mel) / double(mels + 2);
    std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
    for (int64_t i = 0; i < mels + 2; ++i) {
      double hz = 700 * (std::pow(10.0, (double(i) * step + lo_mel) / 2595) - 1);
      edge[size_t(i)] = int64_t(std::floor(double(dft + 1) * hz / double(rate_v[0])));
    }
    std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
    auto set = [&](int64_t j, int64_t i, double v) {
      if (j >= 0 && j < bins) w[size_t(j * mels + i)] = v;
    };
    for (int64_t i = 0; i < mels; ++i) {
      int64_t left = edge[size_t(i)], center = edge[size_t(i + 1)], right = edge[size_t(i + 2)];
      if (center == left) set(center, i, 1);
      else
        for (int64_t j = left; j <= center; ++j) set(j, i, double(j - left) / double(center - left));
      for (int64_t j = center; j < right; ++j) set(j, i, double(right - j) / double(right - center));
    }
    int64_t dims[2] = {bins, mels};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dtype_, dims, &y));
    for (size_t i = 0; i < w.size(); ++i) narrow::store(dtype_, y.raw, int64_t(i), w[i], true);
    return nullptr;
  }

 private:
  std::string label_;
  int32_t dtype_;
};

}  // namespace

void register_spectral_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("DFT").since(17).input_type(0, sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<DftKernel>());
  registry.add(sdk::KernelDefBuilder("STFT").since(17).input_type(0, sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<StftKernel>());
  // The generators' element type is an attribute.
  auto numeric_output = [](const sdk::NodeInfo& n) {
    int32_t t = int32_t(n.get_int("output_datatype", ONYX_DTYPE_FLOAT32));
    return util::in_set(t, util::kNumeric | util::kHalf) ? std::string() : std::string("output_datatype is not numeric");
  };
  registry.add(sdk::KernelDefBuilder("MelWeightMatrix").since(17).check(numeric_output).create<MelKernel>());
  for (auto [op, kind] : {std::pair{"HannWindow", Window::kHann}, std::pair{"HammingWindow", Window::kHamming},
                          std::pair{"BlackmanWindow", Window::kBlackman}})
    registry.add(sdk::KernelDefBuilder(op).since(17).check(numeric_output).create([kind = kind](const sdk::NodeInfo& n) {
      return std::make_unique<WindowKernel>(n, kind);
    }));
}

}  // namespace onyx::cpu
