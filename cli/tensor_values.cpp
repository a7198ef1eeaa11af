#include "tensor_values.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "command.h"
#include "session_setup.h"

namespace onyx::cli {

namespace {

// splitmix64: tiny, fast, and identical everywhere, unlike std::uniform_*_distribution.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double unit() { return double(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exponent = int32_t((x >> 23) & 0xFF) - 127 + 15;
  uint32_t mantissa = x & 0x7FFFFF;
  if (exponent <= 0) {  // subnormal or zero in half precision (our values are small)
    if (exponent < -10) return uint16_t(sign);
    mantissa |= 0x800000;
    return uint16_t(sign | (mantissa >> (14 - exponent)));
  }
  if (exponent >= 31) return uint16_t(sign | 0x7C00);
  return uint16_t(sign | uint32_t(exponent) << 10 | mantissa >> 13);  // truncating is fine for test data
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  if (exponent == 0) {
    float value = std::ldexp(float(mantissa), -24);
    return sign ? -value : value;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000 | mantissa << 13);
  return std::bit_cast<float>(sign | (exponent + 112) << 23 | mantissa << 13);
}

float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }
uint16_t float_to_bfloat16(float f) { return uint16_t(std::bit_cast<uint32_t>(f) >> 16); }

template <typename T>
void fill_integers(onyx::Tensor& t, SplitMix64& rng, uint64_t range) {
  T* out = t.data<T>();
  for (int64_t k = 0; k < t.size(); ++k) out[k] = T(rng.next() % range);
}

template <typename T>
T load(const onyx::Tensor& t, int64_t k) {
  T value;
  std::memcpy(&value, static_cast<const char*>(onyx_tensor_data(t.get())) + size_t(k) * sizeof(T), sizeof(T));
  return value;
}

bool is_floating(int32_t dtype) {
  return dtype == ONYX_DTYPE_FLOAT32 || dtype == ONYX_DTYPE_FLOAT64 || dtype == ONYX_DTYPE_FLOAT16 ||
         dtype == ONYX_DTYPE_BFLOAT16 || dtype == ONYX_DTYPE_COMPLEX64 || dtype == ONYX_DTYPE_COMPLEX128;
}

}  // namespace

std::string random_fill_description(int32_t dtype) {
  if (dtype == ONYX_DTYPE_BOOL) return "random 0/1";
  if (is_floating(dtype)) return "uniform [-1, 1)";
  return "uniform integers [0, 10)";
}

onyx::Tensor random_tensor(int32_t dtype, const std::vector<int64_t>& dims, uint64_t seed) {
  if (dtype_size(dtype) == 0) throw CliError("cannot generate random " + dtype_name(dtype) + " values");
  onyx::Tensor t = onyx::Tensor::zeros(OnyxDataType(dtype), dims);
  SplitMix64 rng(seed);
  auto signed_unit = [&] { return 2.0 * rng.unit() - 1.0; };
  int64_t n = t.size();
  switch (dtype) {
    case ONYX_DTYPE_FLOAT32:
      for (int64_t k = 0; k < n; ++k) t.data<float>()[k] = float(signed_unit());
      break;
    case ONYX_DTYPE_COMPLEX64:
      for (int64_t k = 0; k < 2 * n; ++k) t.data<float>()[k] = float(signed_unit());
      break;
    case ONYX_DTYPE_FLOAT64:
      for (int64_t k = 0; k < n; ++k) t.data<double>()[k] = signed_unit();
      break;
    case ONYX_DTYPE_COMPLEX128:
      for (int64_t k = 0; k < 2 * n; ++k) t.data<double>()[k] = signed_unit();
      break;
    case ONYX_DTYPE_FLOAT16:
      for (int64_t k = 0; k < n; ++k) t.data<uint16_t>()[k] = float_to_half(float(signed_unit()));
      break;
    case ONYX_DTYPE_BFLOAT16:
      for (int64_t k = 0; k < n; ++k) t.data<uint16_t>()[k] = float_to_bfloat16(float(signed_unit()));
      break;
    case ONYX_DTYPE_BOOL: fill_integers<uint8_t>(t, rng, 2); break;
    case ONYX_DTYPE_UINT8: fill_integers<uint8_t>(t, rng, 10); break;
    case ONYX_DTYPE_INT8: fill_integers<int8_t>(t, rng, 10); break;
    case ONYX_DTYPE_UINT16: fill_integers<uint16_t>(t, rng, 10); break;
    case ONYX_DTYPE_INT16: fill_integers<int16_t>(t, rng, 10); break;
    case ONYX_DTYPE_INT32: fill_integers<int32_t>(t, rng, 10); break;
    case ONYX_DTYPE_UINT32: fill_integers<uint32_t>(t, rng, 10); break;
    case ONYX_DTYPE_INT64: fill_integers<int64_t>(t, rng, 10); break;
    case ONYX_DTYPE_UINT64: fill_integers<uint64_t>(t, rng, 10); break;
    default: throw CliError("cannot generate random " + dtype_name(dtype) + " values");
  }
  return t;
}

double element_as_double(onyx::Tensor& t, int64_t k) {
  switch (t.dtype()) {
    case ONYX_DTYPE_FLOAT32: case ONYX_DTYPE_COMPLEX64: return load<float>(t, k);
    case ONYX_DTYPE_FLOAT64: case ONYX_DTYPE_COMPLEX128: return load<double>(t, k);
    case ONYX_DTYPE_FLOAT16: return half_to_float(load<uint16_t>(t, k));
    case ONYX_DTYPE_BFLOAT16: return bfloat16_to_float(load<uint16_t>(t, k));
    case ONYX_DTYPE_BOOL: case ONYX_DTYPE_UINT8: return load<uint8_t>(t, k);
    case ONYX_DTYPE_INT8: return load<int8_t>(t, k);
    case ONYX_DTYPE_UINT16: return load<uint16_t>(t, k);
    case ONYX_DTYPE_INT16: return load<int16_t>(t, k);
    case ONYX_DTYPE_INT32: return load<int32_t>(t, k);
    case ONYX_DTYPE_UINT32: return load<uint32_t>(t, k);
    case ONYX_DTYPE_INT64: return double(load<int64_t>(t, k));
    case ONYX_DTYPE_UINT64: return double(load<uint64_t>(t, k));
    default: return std::nan("");
  }
}

ValueSummary summarize(onyx::Tensor& t, size_t first_count) {
  ValueSummary s;
  if (dtype_size(t.dtype()) == 0) return s;
  bool complex = t.dtype() == ONYX_DTYPE_COMPLEX64 || t.dtype() == ONYX_DTYPE_COMPLEX128;
  s.count = t.size() * (complex ? 2 : 1);
  double sum = 0;
  int64_t finite = 0;
  bool seen = false;  // min/max hold a value
  for (int64_t k = 0; k < s.count; ++k) {
    double v = element_as_double(t, k);
    if (size_t(k) < first_count) s.first.push_back(v);
    if (std::isnan(v)) {
      ++s.nan_count;
      continue;
    }
    if (std::isinf(v)) ++s.inf_count;
    s.min = seen ? std::min(s.min, v) : v;
    s.max = seen ? std::max(s.max, v) : v;
    seen = true;
    if (std::isfinite(v)) {
      sum += v;
      ++finite;
    }
  }
  s.mean = finite ? sum / double(finite) : std::nan("");
  return s;
}

std::string summary_text(const ValueSummary& s, int32_t dtype) {
  if (s.count == 0) return "(empty)";
  bool integral = !is_floating(dtype);
  auto fmt = [&](double v) {
    char buf[40];
    if (integral && std::isfinite(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
    else std::snprintf(buf, sizeof buf, "%.6g", v);
    return std::string(buf);
  };
  std::string text;
  if (s.nan_count < s.count)
    text = "min " + fmt(s.min) + "  max " + fmt(s.max) + "  mean " + fmt(s.mean);
  if (s.nan_count) text += (text.empty() ? "" : "  ") + std::to_string(s.nan_count) + " NaN";
  if (s.inf_count) text += "  " + std::to_string(s.inf_count) + " inf";
  text += "\n    first: [";
  for (size_t k = 0; k < s.first.size(); ++k) text += (k ? ", " : "") + fmt(s.first[k]);
  if (int64_t(s.first.size()) < s.count) text += ", ...";
  return text + "]";
}

}  // namespace onyx::cli
