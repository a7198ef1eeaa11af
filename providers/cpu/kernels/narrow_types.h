// narrow_types.h: element access for the types narrower than a byte or
// without a C++ counterpart: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ),
// float8e8m0 (a power of two), float4 (E2M1), 4-bit integers (two per byte,
// low nibble first) and 2-bit integers (four per byte, lowest bits first).
// Values travel as double; every narrow value is exact in double.
#pragma once

#include <onyx/plugin_sdk.hpp>

#include <cstdint>
#include <string>

namespace onyx::cpu::narrow {

// True for the float8, float4, 4-bit and 2-bit integer types.
bool is_narrow(int32_t dtype);

// How a value between two powers of two becomes float8e8m0 (Cast's
// `round_mode`): up (the default), down, or to the nearest (ties up when
// the lower code is odd, ONNX's reference rule).
enum class E8m0Round { kUp, kDown, kNearest };

// Parses Cast's round_mode attribute; false for an unknown name.
bool parse_e8m0_round(const std::string& name, E8m0Round* out);

// Element i of a tensor of any numeric type (narrow or not, bool, float16,
// bfloat16) as double. int64 values beyond 2^53 lose precision; callers use
// this only where a narrow type is involved.
double load(int32_t dtype, const void* data, int64_t i);

// Stores v as element i. To float8/float4, rounding is to nearest even;
// with `saturate`, values beyond the largest finite value (infinities too)
// become that value, otherwise they become infinity (E5M2) or NaN. To
// float8e8m0 the value is first rounded to float32, then its exponent by
// `round`; infinities and NaN become the NaN code 0xFF, and with
// `saturate` a value above the largest code stays at it. To the 4-bit and
// 2-bit integers the value is truncated and wraps around, like Cast to int8.
// Other types convert like Cast. Packed stores read-modify-write a byte, so
// two threads must not store to one byte.
void store(int32_t dtype, void* data, int64_t i, double v, bool saturate, E8m0Round round = E8m0Round::kUp);

// Encodes/decodes one float8 or float4 code.
uint8_t encode_float(int32_t dtype, double v, bool saturate);
double decode_float(int32_t dtype, uint8_t code);

}  // namespace onyx::cpu::narrow
