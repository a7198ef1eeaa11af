// narrow_types.cpp: float8 / float4 / 4-bit and 2-bit integer element access.
#include "kernels/narrow_types.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/kernel_util.h"

namespace onyx::cpu::narrow {
namespace {

// A small float format. `fn`: no infinities, the all-ones code is NaN;
// `uz`: no negative zero, 0x80 is the only NaN; neither: IEEE-like (E5M2)
// unless `plain` (E2M1: no infinities and no NaN at all).
struct Format {
  int ebits, mbits, bias;
  bool fn, uz, plain;
  uint8_t max_code;  // the largest finite positive code
};

const Format* format_of(int32_t dtype) {
  static const Format e4m3fn{4, 3, 7, true, false, false, 0x7E};
  static const Format e4m3fnuz{4, 3, 8, true, true, false, 0x7F};
  static const Format e5m2{5, 2, 15, false, false, false, 0x7B};
  static const Format e5m2fnuz{5, 2, 16, true, true, false, 0x7F};
  static const Format e2m1{2, 1, 1, false, false, true, 0x7};
  switch (dtype) {
    case ONYX_DTYPE_FLOAT8E4M3FN: return &e4m3fn;
    case ONYX_DTYPE_FLOAT8E4M3FNUZ: return &e4m3fnuz;
    case ONYX_DTYPE_FLOAT8E5M2: return &e5m2;
    case ONYX_DTYPE_FLOAT8E5M2FNUZ: return &e5m2fnuz;
    case ONYX_DTYPE_FLOAT4E2M1: return &e2m1;
    default: return nullptr;
  }
}

uint8_t sign_bit(const Format& f) { return uint8_t(1u << (f.ebits + f.mbits)); }

double decode(const Format& f, uint8_t code) {
  const uint32_t sign = code & sign_bit(f);
  const uint32_t exp = (code >> f.mbits) & ((1u << f.ebits) - 1);
  const uint32_t mant = code & ((1u << f.mbits) - 1);
  const uint32_t exp_max = (1u << f.ebits) - 1;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (f.uz && sign && exp == 0 && mant == 0) return nan;
  if (!f.plain && !f.fn && exp == exp_max) return mant ? nan : (sign ? -INFINITY : INFINITY);
  if (f.fn && !f.uz && exp == exp_max && mant == (1u << f.mbits) - 1) return nan;
  double value = exp == 0 ? std::ldexp(double(mant), 1 - f.bias - f.mbits)
                          : std::ldexp(double(mant | (1u << f.mbits)), int(exp) - f.bias - f.mbits);
  return sign ? -value : value;
}

uint8_t encode(const Format& f, double v, bool saturate) {
  const uint8_t sign = std::signbit(v) ? sign_bit(f) : 0;
  // E2M1 has no NaN: ONNX's reference maps NaN to its code 0x8 (-0).
  // The NaN codes ONNX's reference writes.
  const uint8_t nan_code = f.uz ? 0x80 : f.plain ? 0x8 : uint8_t((f.fn ? 0x7F : 0x7E) | sign);
  const uint8_t overflow = saturate || f.plain ? uint8_t(f.max_code | sign)
                           : f.fn              ? nan_code
                                               : uint8_t(0x7C | sign);  // E5M2 infinity
  if (std::isnan(v)) return nan_code;
  double a = std::fabs(v);
  uint8_t code;
  double top = decode(f, f.max_code), below_top = decode(f, uint8_t(f.max_code - 1));
  if (a >= top) {
    double half_ulp = (top - below_top) / 2;
    bool rounds_to_top = a < top + half_ulp || (a == top + half_ulp && (f.max_code & 1) == 0);
    if (std::isinf(a) || !rounds_to_top) return overflow;
    code = f.max_code;
  } else {
    // Positive codes are ordered by value: find the pair around a.
    uint8_t lo = 0, hi = f.max_code;
    while (hi - lo > 1) {
      uint8_t mid = uint8_t((lo + hi) / 2);
      (decode(f, mid) <= a ? lo : hi) = mid;
    }
    double dl = a - decode(f, lo), dh = decode(f, hi) - a;
    code = dl < dh ? lo : dh < dl ? hi : (lo & 1) == 0 ? lo : hi;
  }
  if (code == 0 && f.uz) return 0;  // no negative zero
  return uint8_t(code | sign);
}

bool is_small_int(int32_t dtype) {
  return dtype == ONYX_DTYPE_INT4 || dtype == ONYX_DTYPE_UINT4 || dtype == ONYX_DTYPE_INT2 || dtype == ONYX_DTYPE_UINT2;
}

// float8e8m0: the code is a float32 exponent, 2^(code - 127); 0xFF is NaN.
double decode_e8m0(uint8_t code) {
  return code == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, int(code) - 127);
}

// As ONNX's to_float8e8m0: the float32's exponent field, rounded by its
// fraction (the sign is dropped; float32 subnormals have exponent 0).
uint8_t encode_e8m0(double v, bool saturate, E8m0Round round) {
  float f = float(v);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  uint32_t exponent = (bits >> 23) & 0xFF;
  if (exponent == 0xFF) return 0xFF;
  bool up = false;
  if (round == E8m0Round::kUp) {
    up = (bits & 0x7FFFFF) != 0;
  } else if (round == E8m0Round::kNearest) {
    bool guard = bits & 0x400000, rest = bits & 0x3FFFFF, odd = exponent > 0;
    up = guard && (rest || odd);
  }
  if (up && saturate && exponent == 0xFE) up = false;
  return uint8_t(exponent + (up ? 1 : 0));
}

// Bits per element of a packed type (4 or 2), 0 for the others.
int packed_bits(int32_t dtype) {
  size_t per_byte = onyx_dtype_elements_per_byte(dtype);
  return per_byte ? int(8 / per_byte) : 0;
}

}  // namespace

bool is_narrow(int32_t dtype) {
  return format_of(dtype) || is_small_int(dtype) || dtype == ONYX_DTYPE_FLOAT8E8M0;
}

bool parse_e8m0_round(const std::string& name, E8m0Round* out) {
  if (name == "up") *out = E8m0Round::kUp;
  else if (name == "down") *out = E8m0Round::kDown;
  else if (name == "nearest") *out = E8m0Round::kNearest;
  else return false;
  return true;
}

uint8_t encode_float(int32_t dtype, double v, bool saturate) { return encode(*format_of(dtype), v, saturate); }
double decode_float(int32_t dtype, uint8_t code) { return decode(*format_of(dtype), code); }

double load(int32_t dtype, const void* data, int64_t i) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (int bits = packed_bits(dtype)) {
    int64_t per_byte = 8 / bits;
    unsigned code = (bytes[i / per_byte] >> (bits * (i % per_byte))) & ((1u << bits) - 1);
    if (dtype == ONYX_DTYPE_FLOAT4E2M1) return decode(*format_of(dtype), uint8_t(code));
    bool is_signed = dtype == ONYX_DTYPE_INT4 || dtype == ONYX_DTYPE_INT2;
    return is_signed && code >= (1u << (bits - 1)) ? double(int(code) - (1 << bits)) : double(code);
  }
  if (dtype == ONYX_DTYPE_FLOAT8E8M0) return decode_e8m0(bytes[i]);
  if (const Format* f = format_of(dtype)) return decode(*f, bytes[i]);
  if (util::is_half(dtype)) return util::half_value(dtype, static_cast<const uint16_t*>(data)[i]);
  double out = 0;
  util::visit<util::kNumeric | util::kBool>(dtype, [&](auto tag) {
    using T = decltype(tag);
    out = double(static_cast<const T*>(data)[i]);
  });
  return out;
}

void store(int32_t dtype, void* data, int64_t i, double v, bool saturate, E8m0Round round) {
  auto* bytes = static_cast<uint8_t*>(data);
  if (int bits = packed_bits(dtype)) {
    unsigned mask = (1u << bits) - 1, code;
    if (dtype == ONYX_DTYPE_FLOAT4E2M1) {
      code = encode(*format_of(dtype), v, saturate);
    } else {
      // Like the other integer casts: truncate, then wrap around.
      code = std::isnan(v) || std::isinf(v) ? 0 : unsigned(int64_t(std::trunc(v)) & mask);
    }
    int64_t per_byte = 8 / bits;
    int shift = int(bits * (i % per_byte));
    uint8_t& b = bytes[i / per_byte];
    b = uint8_t((b & ~(mask << shift)) | (code << shift));
    return;
  }
  if (dtype == ONYX_DTYPE_FLOAT8E8M0) {
    bytes[i] = encode_e8m0(v, saturate, round);
    return;
  }
  if (const Format* f = format_of(dtype)) {
    bytes[i] = encode(*f, v, saturate);
    return;
  }
  if (util::is_half(dtype)) {
    static_cast<uint16_t*>(data)[i] = util::half_bits(dtype, float(v));
    return;
  }
  util::visit<util::kNumeric | util::kBool>(dtype, [&](auto tag) {
    using T = decltype(tag);
    T out;
    if constexpr (std::is_same_v<T, bool>) {
      out = v != 0;
    } else if constexpr (std::is_integral_v<T>) {
      // Like Cast: truncate toward zero, NaN to 0, saturate beyond int64.
      out = std::isnan(v) ? T(0) : v >= 0x1p63 ? T(INT64_MAX) : v < -0x1p63 ? T(INT64_MIN) : T(int64_t(v));
    } else {
      out = T(v);
    }
    static_cast<T*>(data)[i] = out;
  });
}

}  // namespace onyx::cpu::narrow
