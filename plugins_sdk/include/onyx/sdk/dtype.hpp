// sdk/dtype.hpp: element types as a plugin sees them: byte sizes, names for
// messages, and DTypeSet, the sets that kernel definitions constrain their
// inputs with (KernelDefBuilder::input_type and friends).
#pragma once

#include <onyx_provider.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

namespace onyx::sdk {

// The ABI's dtype table (onyx_dtype.h), wrapped. Bytes per element; 0 for
// sub-byte and non-numeric types.
inline size_t dtype_size(int32_t dtype) { return onyx_dtype_size(dtype); }

// "float32", ...; "unknown" for codes the ABI does not define.
inline const char* dtype_name(int32_t dtype) {
  const char* name = onyx_dtype_name(dtype);
  return name ? name : "unknown";
}

// Bytes of `count` elements, sub-byte types (two or four per byte) included.
inline size_t dtype_bytes(int32_t dtype, size_t count) {
  return onyx_dtype_storage_bytes(dtype, int64_t(count));
}

inline int64_t element_count(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// A set of element types (bit k stands for OnyxDataType k). Combine with |.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<int32_t> types) {
    for (int32_t t : types) bits_ |= bit(t);
  }
  constexpr bool contains(int32_t dtype) const { return (bits_ & bit(dtype)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr int size() const { return std::popcount(bits_); }
  constexpr DTypeSet operator|(DTypeSet other) const { return from_bits(bits_ | other.bits_); }
  constexpr bool operator==(const DTypeSet&) const = default;

  // "float32, float64, int32" for messages: floats, then integers, bool and
  // the narrow types (the order CPU kernel messages have always used).
  std::string names() const {
    static const int32_t order[] = {
        ONYX_DTYPE_FLOAT32, ONYX_DTYPE_FLOAT64, ONYX_DTYPE_INT8,   ONYX_DTYPE_INT16,
        ONYX_DTYPE_INT32,   ONYX_DTYPE_INT64,   ONYX_DTYPE_UINT8,  ONYX_DTYPE_UINT16,
        ONYX_DTYPE_UINT32,  ONYX_DTYPE_UINT64,  ONYX_DTYPE_BOOL,   ONYX_DTYPE_FLOAT16,
        ONYX_DTYPE_BFLOAT16};
    std::string s;
    DTypeSet rest = *this;
    for (int32_t t : order) {
      if (!contains(t)) continue;
      s += std::string(s.empty() ? "" : ", ") + dtype_name(t);
      rest.bits_ &= ~bit(t);
    }
    for (int32_t t = 0; t < 64; ++t)
      if (rest.contains(t)) s += std::string(s.empty() ? "" : ", ") + dtype_name(t);
    return s;
  }

 private:
  static constexpr uint64_t bit(int32_t dtype) {
    return dtype >= 0 && dtype < 64 ? uint64_t(1) << dtype : 0;
  }
  static constexpr DTypeSet from_bits(uint64_t bits) {
    DTypeSet s;
    s.bits_ = bits;
    return s;
  }
  uint64_t bits_ = 0;
};

// Named sets; the names match the CPU provider's historic type sets.
namespace dtypes {
inline constexpr DTypeSet kFloat32{ONYX_DTYPE_FLOAT32};
inline constexpr DTypeSet kFloat{ONYX_DTYPE_FLOAT32, ONYX_DTYPE_FLOAT64};
inline constexpr DTypeSet kHalf{ONYX_DTYPE_FLOAT16, ONYX_DTYPE_BFLOAT16};
inline constexpr DTypeSet kSigned{ONYX_DTYPE_INT8, ONYX_DTYPE_INT16, ONYX_DTYPE_INT32, ONYX_DTYPE_INT64};
inline constexpr DTypeSet kUnsigned{ONYX_DTYPE_UINT8, ONYX_DTYPE_UINT16, ONYX_DTYPE_UINT32,
                                    ONYX_DTYPE_UINT64};
inline constexpr DTypeSet kInt = kSigned | kUnsigned;
inline constexpr DTypeSet kBool{ONYX_DTYPE_BOOL};
inline constexpr DTypeSet kNumeric = kFloat | kInt;
inline constexpr DTypeSet kFloat8{ONYX_DTYPE_FLOAT8E4M3FN, ONYX_DTYPE_FLOAT8E4M3FNUZ,
                                  ONYX_DTYPE_FLOAT8E5M2, ONYX_DTYPE_FLOAT8E5M2FNUZ};
}  // namespace dtypes

}  // namespace onyx::sdk
