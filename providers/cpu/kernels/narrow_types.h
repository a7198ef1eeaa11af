// narrow_types.h: element access for the types narrower than a byte or
// without a C++ counterpart: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ),
// float4 (E2M1) and 4-bit integers (packed two per byte, low nibble first).
// Values travel as double; every narrow value is exact in double.
#pragma once

#include <onyx/plugin_sdk.hpp>

#include <cstdint>

namespace onyx::cpu::narrow {

// True for the float8, float4 and 4-bit integer types.
bool is_narrow(int32_t dtype);

// Element i of a tensor of any numeric type (narrow or not, bool, float16,
// bfloat16) as double. int64 values beyond 2^53 lose precision; callers use
// this only where a narrow type is involved.
double load(int32_t dtype, const void* data, int64_t i);

// Stores v as element i. To float8/float4, rounding is to nearest even;
// with `saturate`, values beyond the largest finite value (infinities too)
// become that value, otherwise they become infinity (E5M2) or NaN. To int4
// and uint4 the value is truncated and wraps around, like Cast to int8.
// Other types convert like Cast. 4-bit stores read-modify-write a byte, so
// two threads must not store to one byte.
void store(int32_t dtype, void* data, int64_t i, double v, bool saturate);

// Encodes/decodes one float8 or float4 code.
uint8_t encode_float(int32_t dtype, double v, bool saturate);
double decode_float(int32_t dtype, uint8_t code);

}  // namespace onyx::cpu::narrow
