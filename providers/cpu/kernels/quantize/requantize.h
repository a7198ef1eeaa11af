// requantize.h: int32 accumulators back to 8 bits, the output stage of every
// integer GEMM and convolution:
//   y = saturate(round_half_even((acc + bias[c]) * multiplier[c]) + zero)
// with multiplier = input scale x weight scale / output scale, per output
// channel c (or one for all), in float64 so that the result is the correctly
// rounded value of the float64 reference whenever that is not a tie.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gemm/qgemm.h"

namespace onyx::cpu::quant {

struct Requantizer {
  std::vector<double> multiplier;  // 1 or per channel
  std::vector<int32_t> bias;       // empty, or per channel
  double zero = 0;
  bool is_signed = false;  // int8 output, else uint8

  double multiplier_at(int64_t c) const { return multiplier[multiplier.size() == 1 ? 0 : size_t(c)]; }
  int32_t bias_at(int64_t c) const { return bias.empty() ? 0 : bias[size_t(c)]; }

  // Rounds half to even without a libm call, so that the loops below
  // vectorize: adding and subtracting 1.5 * 2^52 leaves the integer nearest to
  // v (ties to even, in the default rounding mode) for |v| < 2^51, which the
  // clamp to a range far wider than any 8-bit result guarantees.
  static double round_even(double v) {
    constexpr double kMagic = 6755399441055744.0;
    v = std::clamp(v, -1.0e9, 1.0e9);
    return (v + kMagic) - kMagic;
  }

  // count results of channel c, reading acc[i * acc_stride] and writing
  // y[i * y_stride]; contiguous rows go to the CPU's vectorized output stage.
  template <typename T>
  void row(const int32_t* acc, int64_t acc_stride, int64_t count, int64_t c, T* y, int64_t y_stride = 1) const {
    const double m = multiplier_at(c), b = double(bias_at(c));
    if (acc_stride == 1 && y_stride == 1) return requantize_row(acc, count, b, m, zero, is_signed, y);
    const double lo = is_signed ? -128.0 : 0.0, hi = is_signed ? 127.0 : 255.0;
    for (int64_t i = 0; i < count; ++i)
      y[i * y_stride] = T(std::clamp(round_even((double(acc[i * acc_stride]) + b) * m) + zero, lo, hi));
  }
};

}  // namespace onyx::cpu::quant
