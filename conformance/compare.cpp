// compare.cpp: element-wise comparison of outputs.
#include "compare.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace onyx::conformance {

namespace {

enum class ElementClass { kFloat, kComplex, kSigned, kUnsigned, kSubByteSigned, kSubByteUnsigned };

ElementClass element_class(int32_t dtype) {
  switch (dtype) {
    case 1: case 10: case 11: case 16: case 17: case 18: case 19: case 20: case 23: case 24:
      return ElementClass::kFloat;
    case 14: case 15: return ElementClass::kComplex;
    case 3: case 5: case 6: case 7: return ElementClass::kSigned;
    case 22: case 26: return ElementClass::kSubByteSigned;
    case 21: case 25: return ElementClass::kSubByteUnsigned;
    default: return ElementClass::kUnsigned;  // uint8/16/32/64, bool
  }
}

// Which encodings of a small float format are special.
enum class Specials {
  kIeee,  // all-ones exponent: infinities and NaNs (float16, E5M2)
  kFn,    // no infinities; all-ones exponent and mantissa is NaN (E4M3FN)
  kFnuz,  // no infinities, no negative zero; 0x80 is the only NaN (the FNUZ types)
  kNone   // every encoding is a finite number (float4e2m1)
};

// A small float format: `ebits` exponent and `mbits` mantissa bits.
double decode_minifloat(uint32_t bits, int ebits, int mbits, int bias, Specials specials) {
  const uint32_t sign = (bits >> (ebits + mbits)) & 1u;
  const uint32_t exp = (bits >> mbits) & ((1u << ebits) - 1);
  const uint32_t mant = bits & ((1u << mbits) - 1);
  const uint32_t exp_max = (1u << ebits) - 1;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (specials == Specials::kFnuz && sign && exp == 0 && mant == 0) return nan;
  if (specials == Specials::kIeee && exp == exp_max) return mant ? nan : (sign ? -INFINITY : INFINITY);
  if (specials == Specials::kFn && exp == exp_max && mant == (1u << mbits) - 1) return nan;
  double value = exp == 0 ? std::ldexp(double(mant), 1 - bias - mbits)
                          : std::ldexp(double(mant | (1u << mbits)), int(exp) - bias - mbits);
  return sign ? -value : value;
}

int64_t read_signed(int32_t dtype, const void* data, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(data);
  switch (dtype) {
    case 3: return int8_t(p[i]);
    case 5: { int16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case 6: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case 22: { int v = (p[i / 2] >> (4 * (i % 2))) & 0xF; return v >= 8 ? v - 16 : v; }
    case 26: { int v = (p[i / 4] >> (2 * (i % 4))) & 0x3; return v >= 2 ? v - 4 : v; }
    default: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return v; }
  }
}

uint64_t read_unsigned(int32_t dtype, const void* data, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(data);
  switch (dtype) {
    case 2: case 9: return p[i];
    case 4: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case 12: { uint32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case 21: return (p[i / 2] >> (4 * (i % 2))) & 0xF;
    case 25: return (p[i / 4] >> (2 * (i % 4))) & 0x3;
    default: { uint64_t v; std::memcpy(&v, p + 8 * i, 8); return v; }
  }
}

std::string shape_string(const int64_t* dims, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string index_string(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    idx[k] = dims[k] ? flat % dims[k] : 0;
    flat = dims[k] ? flat / dims[k] : 0;
  }
  return shape_string(idx.data(), idx.size());
}

}  // namespace

double decode_float(int32_t dtype, const void* data, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(data);
  switch (dtype) {
    case 1: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case 11: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case 10: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); return decode_minifloat(h, 5, 10, 15, Specials::kIeee); }
    case 16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      uint32_t bits = uint32_t(h) << 16;
      float v;
      std::memcpy(&v, &bits, 4);
      return v;
    }
    case 17: return decode_minifloat(p[i], 4, 3, 7, Specials::kFn);
    case 18: return decode_minifloat(p[i], 4, 3, 8, Specials::kFnuz);
    case 19: return decode_minifloat(p[i], 5, 2, 15, Specials::kIeee);
    case 20: return decode_minifloat(p[i], 5, 2, 16, Specials::kFnuz);
    case 23: return decode_minifloat((p[i / 2] >> (4 * (i % 2))) & 0xF, 2, 1, 1, Specials::kNone);
    case 24:  // float8e8m0: an exponent only, 2^(bits - 127); 0xFF is NaN
      return p[i] == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, int(p[i]) - 127);
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

Comparison compare_tensor(const HostTensor& expected, int32_t dtype, const int64_t* dims,
                          size_t rank, const void* data, const Tolerance& tol) {
  Comparison c;
  auto fail = [&](std::string message) {
    c.ok = false;
    c.message = std::move(message);
    return c;
  };
  if (dtype != expected.dtype)
    return fail(std::string("element type ") + dtype_name(dtype) + ", expected " +
                dtype_name(expected.dtype));
  if (rank != expected.dims.size() || !std::equal(expected.dims.begin(), expected.dims.end(), dims))
    return fail("shape " + shape_string(dims, rank) + ", expected " +
                shape_string(expected.dims.data(), expected.dims.size()));
  const int64_t count = expected.element_count();
  const ElementClass cls = element_class(dtype);
  int64_t mismatches = 0;
  std::string first;
  auto note = [&](int64_t i, const std::string& got, const std::string& want) {
    if (mismatches++ == 0)
      first = "at " + index_string(i, expected.dims) + ": got " + got + ", expected " + want;
  };
  auto check_float = [&](int64_t i, double got, double want) {
    if (std::isnan(want) || std::isnan(got)) {
      if (std::isnan(want) != std::isnan(got)) note(i, std::to_string(got), std::to_string(want));
      return;
    }
    if (std::isinf(want) || std::isinf(got)) {
      if (got != want) note(i, std::to_string(got), std::to_string(want));
      return;
    }
    const double err = std::fabs(got - want);
    c.max_error = std::max(c.max_error, err);
    if (err > tol.atol + tol.rtol * std::fabs(want)) {
      std::ostringstream g, w;
      g.precision(9);
      w.precision(9);
      g << got;
      w << want;
      note(i, g.str(), w.str());
    }
  };
  for (int64_t i = 0; i < count; ++i) {
    switch (cls) {
      case ElementClass::kFloat:
        check_float(i, decode_float(dtype, data, i), decode_float(dtype, expected.bytes.data(), i));
        break;
      case ElementClass::kComplex: {
        const int32_t part = dtype == 14 ? 1 : 11;
        for (int64_t k = 0; k < 2; ++k)
          check_float(i, decode_float(part, data, 2 * i + k),
                      decode_float(part, expected.bytes.data(), 2 * i + k));
        break;
      }
      case ElementClass::kSigned: case ElementClass::kSubByteSigned: {
        int64_t got = read_signed(dtype, data, i), want = read_signed(dtype, expected.bytes.data(), i);
        if (got != want) note(i, std::to_string(got), std::to_string(want));
        break;
      }
      default: {
        uint64_t got = read_unsigned(dtype, data, i), want = read_unsigned(dtype, expected.bytes.data(), i);
        if (got != want) note(i, std::to_string(got), std::to_string(want));
      }
    }
  }
  if (mismatches > 0) {
    std::ostringstream m;
    m << mismatches << " of " << count << " elements differ (rtol " << tol.rtol << ", atol "
      << tol.atol << "); first " << first;
    return fail(m.str());
  }
  return c;
}

}  // namespace onyx::conformance
