// kernel_util.cpp: the helpers of kernel_util.h.
#include "kernels/kernel_util.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <limits>

namespace onyx::cpu::util {

void parallel_copy(sdk::ComputeContext& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  ctx.parallel_for(bytes, kGrain * 4, [&](size_t b, size_t e) {
    std::memcpy(static_cast<unsigned char*>(dst) + b, static_cast<const unsigned char*>(src) + b, e - b);
  });
}

std::string node_label(const sdk::NodeInfo& node) {
  return sdk::KernelRegistry::qualified(node) + " node '" + node.name + "'";
}

OnyxStatus* fail(const std::string& label, const char* fmt, ...) {
  char buf[768];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s: %s", label.c_str(), buf);
}

std::string dims_str(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? "," : "") + std::to_string(dims[k]);
  return s + "]";
}

bool normalize_axis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

namespace {
bool read_ints_raw(int32_t dtype, const void* data, int64_t n, std::vector<int64_t>* out) {
  out->resize(size_t(n));
  if (dtype == ONYX_DTYPE_INT64) {
    if (n) std::memcpy(out->data(), data, size_t(n) * 8);
    return true;
  }
  if (dtype == ONYX_DTYPE_INT32) {
    const int32_t* p = static_cast<const int32_t*>(data);
    for (int64_t k = 0; k < n; ++k) (*out)[size_t(k)] = p[k];
    return true;
  }
  out->clear();
  return false;
}
}  // namespace

bool read_ints(const sdk::Tensor& t, std::vector<int64_t>* out) {
  return read_ints_raw(t.dtype, t.raw, t.size(), out);
}
bool read_ints(const sdk::ConstantTensor& t, std::vector<int64_t>* out) {
  return read_ints_raw(t.dtype, t.bytes.data(), t.size(), out);
}

bool read_scalar(int32_t dtype, const void* data, double* out) {
  return visit<kNumeric | kBool>(dtype, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, data, sizeof(T));
    *out = double(v);
  });
}

float half_to_float(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(float(mantissa), -24);  // zero or subnormal
  } else if (exponent == 0x1F) {
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity();
  } else {
    uint32_t x = ((exponent + 127 - 15) << 23) | (mantissa << 13);
    std::memcpy(&magnitude, &x, 4);
  }
  uint32_t out;
  std::memcpy(&out, &magnitude, 4);
  out |= sign;
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

uint16_t float_to_half(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t magnitude = x & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) return uint16_t(sign | 0x7E00);  // NaN
  if (magnitude >= 0x477FF000) return uint16_t(sign | 0x7C00);  // >= 65520: inf
  if (magnitude < 0x38800000) {
    // Below the smallest normal half (2^-14): a multiple of 2^-24, rounded
    // half to even by nearbyint under the default rounding mode.
    float a;
    std::memcpy(&a, &magnitude, 4);
    return uint16_t(sign | uint16_t(std::nearbyint(std::ldexp(a, 24))));
  }
  // Rebias the exponent, keep 10 mantissa bits, round the 13 dropped bits
  // half to even (a carry correctly bumps the exponent).
  uint32_t half = ((magnitude >> 23) - 127 + 15) << 10 | ((magnitude >> 13) & 0x3FF);
  uint32_t dropped = magnitude & 0x1FFF;
  if (dropped > 0x1000 || (dropped == 0x1000 && (half & 1))) ++half;
  return uint16_t(sign | half);
}

uint16_t float_to_bfloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  x += 0x7FFF + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

void halves_to_floats(int32_t dtype, const uint16_t* in, float* out, size_t n) {
  if (dtype == ONYX_DTYPE_FLOAT16)
    for (size_t k = 0; k < n; ++k) out[k] = half_to_float(in[k]);
  else
    for (size_t k = 0; k < n; ++k) out[k] = bfloat16_to_float(in[k]);
}

void floats_to_halves(int32_t dtype, const float* in, uint16_t* out, size_t n) {
  if (dtype == ONYX_DTYPE_FLOAT16)
    for (size_t k = 0; k < n; ++k) out[k] = float_to_half(in[k]);
  else
    for (size_t k = 0; k < n; ++k) out[k] = float_to_bfloat16(in[k]);
}

Widened widen(const sdk::Tensor& t, bool copy_values) {
  Widened w;
  w.values.resize(size_t(t.size()));
  if (copy_values && t.raw) halves_to_floats(t.dtype, t.data<uint16_t>(), w.values.data(), w.values.size());
  w.tensor = t;
  w.tensor.dtype = ONYX_DTYPE_FLOAT32;
  w.tensor.raw = t.raw ? w.values.data() : nullptr;  // an output left out stays absent
  return w;
}

void narrow_to(const Widened& w, const sdk::Tensor& out) {
  if (out.raw) floats_to_halves(out.dtype, w.values.data(), out.data<uint16_t>(), w.values.size());
}

std::vector<int64_t> strides_of(std::span<const int64_t> dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

void split_at(std::span<const int64_t> dims, int64_t axis, int64_t* outer, int64_t* n, int64_t* inner) {
  *outer = *n = *inner = 1;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d)
    (d < axis ? *outer : d == axis ? *n : *inner) *= dims[size_t(d)];
}

int64_t row_major_index(const std::vector<int64_t>& pos, const std::vector<int64_t>& dims) {
  int64_t i = 0;
  for (size_t d = 0; d < dims.size(); ++d) i = i * dims[d] + pos[d];
  return i;
}

bool next_row_major(std::vector<int64_t>& pos, const std::vector<int64_t>& dims) {
  for (size_t d = dims.size(); d-- > 0;) {
    if (++pos[d] < dims[d]) return true;
    pos[d] = 0;
  }
  return false;
}

}  // namespace onyx::cpu::util
