// direct_conv.cpp: the direct convolution's ISA dispatch and weight packing
// (the loops: direct_conv_impl.h, built per ISA).
#include "kernels/conv/direct_conv.h"

#include <algorithm>

namespace onyx::cpu::direct_conv {
namespace {

enum class Isa { none, avx2, avx512 };

Isa best_isa() {
  static const Isa isa = [] {
#if defined(ONYX_CPU_AVX512_LOOPS)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) return Isa::avx512;
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
#endif
    return Isa::none;
  }();
  return isa;
}

}  // namespace

std::vector<float> pack_weights(const float* w, int64_t out_channels, int64_t channels, int64_t taps) {
  std::vector<float> packed(size_t(out_channels * channels * taps));
  float* dst = packed.data();
  for (int64_t m0 = 0; m0 < out_channels; m0 += kChannelBlock) {
    const int64_t mb = std::min(kChannelBlock, out_channels - m0);
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t m = 0; m < mb; ++m) *dst++ = w[((m0 + m) * channels + c) * taps + t];
  }
  return packed;
}

int64_t lanes() { return best_isa() == Isa::avx512 ? 16 : 8; }

Plan make_plan(const Shape& s, int64_t width) {
  Plan p;
  p.shape = s;
  for (int64_t i = 0; i < s.kernel_h; ++i)
    for (int64_t j = 0; j < s.kernel_w; ++j)
      p.tap_offsets.push_back(i * s.dilation_h * s.padded_w + j * s.dilation_w);
  for (int64_t r = 0; r < s.out_h; ++r)
    for (int64_t c = 0; c < s.out_w; c += width)
      p.fragments.push_back({r * s.stride_h * s.padded_w + c, r * s.out_w + c, std::min(width, s.out_w - c)});
  p.blocks = (s.out_channels + kChannelBlock - 1) / kChannelBlock;
  return p;
}

detail::Work detail::work_for(const Plan& p, const float* x, const float* packed_w, const float* bias,
                      const Epilogue& e, float* y) {
  return {&p.shape, p.tap_offsets.data(), int64_t(p.tap_offsets.size()), p.fragments.data(),
          int64_t(p.fragments.size()), x, packed_w, bias, &e, y};
}

void run(const Plan& p, const float* x, const float* packed_w, const float* bias, const Epilogue& e,
         float* y, int64_t block_lo, int64_t block_hi) {
  const detail::Work work = detail::work_for(p, x, packed_w, bias, e, y);
  switch (best_isa()) {
#if defined(ONYX_CPU_AVX512_LOOPS)
    case Isa::avx512: return detail::run_avx512(work, block_lo, block_hi);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
    case Isa::avx2: return detail::run_avx2(work, block_lo, block_hi);
#endif
    default: break;
  }
}

bool available() { return best_isa() != Isa::none; }

const char* isa() {
  switch (best_isa()) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    default: return "none";
  }
}

}  // namespace onyx::cpu::direct_conv
