// kernel_harness_tensor.cpp: HostTensor, the float16/bfloat16 conversions
// and NodeSpec's attribute setters of kernel_harness.h.
#include <cmath>

#include "kernel_harness.h"

namespace onyx::test {

// ---------------------------------------------------------------------------
// Tensors and attributes
// ---------------------------------------------------------------------------

int64_t HostTensor::size() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

float half_to_float(uint16_t bits) {
  uint32_t sign = uint32_t(bits >> 15) << 31, exponent = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
  uint32_t out;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000u | (mantissa << 13);  // inf / nan
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {  // subnormal half: value = mantissa * 2^-24, exact in float
    float v = std::ldexp(float(mantissa), -24);
    std::memcpy(&out, &v, 4);
    out |= sign;
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

uint16_t float_to_half(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  float a = std::fabs(value);
  if (std::isnan(value)) return uint16_t(sign | 0x7E00);
  if (a >= 65520.0f) return uint16_t(sign | 0x7C00);  // rounds to inf
  if (a < std::ldexp(1.0f, -14)) {
    // Subnormal range: units of 2^-24; nearbyint rounds half to even.
    return uint16_t(sign | uint16_t(std::nearbyint(std::ldexp(a, 24))));
  }
  uint32_t bits;
  std::memcpy(&bits, &a, 4);
  uint32_t exponent = (bits >> 23) - 112, mantissa = bits & 0x7FFFFF;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into exponent
  return uint16_t(sign | half);
}

float bfloat16_to_float(uint16_t bits) {
  uint32_t x = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bfloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if (std::isnan(value)) return uint16_t((x >> 16) | 0x40);
  x += 0x7FFF + ((x >> 16) & 1);  // round to nearest even
  return uint16_t(x >> 16);
}

std::vector<double> HostTensor::as_doubles() const {
  std::vector<double> out;
  size_t n = size_t(size());
  out.reserve(n);
  auto read = [&](auto tag) {
    using T = decltype(tag);
    for (size_t k = 0; k < n && (k + 1) * sizeof(T) <= bytes.size(); ++k) {
      T v;
      std::memcpy(&v, bytes.data() + k * sizeof(T), sizeof(T));
      out.push_back(double(v));
    }
  };
  switch (dtype) {
    case ONYX_DTYPE_FLOAT32: read(float{}); break;
    case ONYX_DTYPE_FLOAT64: read(double{}); break;
    case ONYX_DTYPE_INT8: read(int8_t{}); break;
    case ONYX_DTYPE_UINT8: case ONYX_DTYPE_BOOL: read(uint8_t{}); break;
    case ONYX_DTYPE_INT16: read(int16_t{}); break;
    case ONYX_DTYPE_UINT16: read(uint16_t{}); break;
    case ONYX_DTYPE_INT32: read(int32_t{}); break;
    case ONYX_DTYPE_UINT32: read(uint32_t{}); break;
    case ONYX_DTYPE_INT64: read(int64_t{}); break;
    case ONYX_DTYPE_UINT64: read(uint64_t{}); break;
    case ONYX_DTYPE_FLOAT16:
    case ONYX_DTYPE_BFLOAT16:
      for (size_t k = 0; k < n && 2 * k + 2 <= bytes.size(); ++k) {
        uint16_t v;
        std::memcpy(&v, bytes.data() + 2 * k, 2);
        out.push_back(dtype == ONYX_DTYPE_FLOAT16 ? half_to_float(v) : bfloat16_to_float(v));
      }
      break;
    default: break;
  }
  return out;
}

HostTensor make_raw(int32_t dtype, std::vector<int64_t> dims, std::vector<unsigned char> bytes) {
  HostTensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.bytes = std::move(bytes);
  return t;
}

HostTensor omitted() {
  HostTensor t;
  t.present = false;
  return t;
}

NodeSpec& NodeSpec::attr(const std::string& key, AttrValue v) {
  attributes.emplace_back(key, std::move(v));
  return *this;
}
NodeSpec& NodeSpec::attr(const std::string& key, int64_t v) {
  AttrValue a;
  a.type = ONYX_ATTR_INT;
  a.i = v;
  return attr(key, std::move(a));
}
NodeSpec& NodeSpec::attr(const std::string& key, double v) {
  AttrValue a;
  a.type = ONYX_ATTR_FLOAT;
  a.f = v;
  return attr(key, std::move(a));
}
NodeSpec& NodeSpec::attr(const std::string& key, const std::string& v) {
  AttrValue a;
  a.type = ONYX_ATTR_STRING;
  a.s = v;
  return attr(key, std::move(a));
}
NodeSpec& NodeSpec::attr(const std::string& key, std::vector<int64_t> v) {
  AttrValue a;
  a.type = ONYX_ATTR_INTS;
  a.ints = std::move(v);
  return attr(key, std::move(a));
}
NodeSpec& NodeSpec::attr(const std::string& key, std::vector<float> v) {
  AttrValue a;
  a.type = ONYX_ATTR_FLOATS;
  a.floats = std::move(v);
  return attr(key, std::move(a));
}
NodeSpec& NodeSpec::attr(const std::string& key, std::vector<std::string> v) {
  AttrValue a;
  a.type = ONYX_ATTR_STRINGS;
  a.strings = std::move(v);
  return attr(key, std::move(a));
}
NodeSpec& NodeSpec::attr(const std::string& key, HostTensor v) {
  AttrValue a;
  a.type = ONYX_ATTR_TENSOR;
  a.tensor = std::move(v);
  return attr(key, std::move(a));
}

}  // namespace onyx::test
