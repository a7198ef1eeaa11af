/*
 * onyx_dtype.h: the element types of the Onyx ABI and the one table of their
 * sizes and names. Part of ABI 1 (included by onyx_provider.h); C99, only
 * stddef.h and stdint.h.
 *
 * Values equal ONNX TensorProto.DataType, so a type read from a model needs
 * no translation. Every function here is pure: thread-safe, no allocation,
 * and defined for every int32_t (codes this header does not know get 0 or
 * NULL), so hosts, plugins and tools share one table instead of copying it.
 */
#ifndef ONYX_DTYPE_H_
#define ONYX_DTYPE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum OnyxDataType {
  ONYX_DTYPE_UNDEFINED = 0,
  ONYX_DTYPE_FLOAT32 = 1,
  ONYX_DTYPE_UINT8 = 2,
  ONYX_DTYPE_INT8 = 3,
  ONYX_DTYPE_UINT16 = 4,
  ONYX_DTYPE_INT16 = 5,
  ONYX_DTYPE_INT32 = 6,
  ONYX_DTYPE_INT64 = 7,
  ONYX_DTYPE_STRING = 8, /* reserved: string tensors are host-only in ABI 1.0 */
  ONYX_DTYPE_BOOL = 9,   /* one byte per element, 0 or 1 */
  ONYX_DTYPE_FLOAT16 = 10,
  ONYX_DTYPE_FLOAT64 = 11,
  ONYX_DTYPE_UINT32 = 12,
  ONYX_DTYPE_UINT64 = 13,
  ONYX_DTYPE_COMPLEX64 = 14,
  ONYX_DTYPE_COMPLEX128 = 15,
  ONYX_DTYPE_BFLOAT16 = 16,
  ONYX_DTYPE_FLOAT8E4M3FN = 17,
  ONYX_DTYPE_FLOAT8E4M3FNUZ = 18,
  ONYX_DTYPE_FLOAT8E5M2 = 19,
  ONYX_DTYPE_FLOAT8E5M2FNUZ = 20,
  ONYX_DTYPE_UINT4 = 21,       /* two per byte, low nibble first */
  ONYX_DTYPE_INT4 = 22,        /* two per byte, low nibble first */
  ONYX_DTYPE_FLOAT4E2M1 = 23,  /* two per byte, low nibble first */
  ONYX_DTYPE_FLOAT8E8M0 = 24,  /* the scale type of OCP microscaling (MX) formats */
  ONYX_DTYPE_UINT2 = 25,       /* four per byte, lowest two bits first */
  ONYX_DTYPE_INT2 = 26         /* four per byte, lowest two bits first */
} OnyxDataType;

/* Bytes per element. 0 for the packed sub-byte types (see
 * onyx_dtype_storage_bytes), for STRING (no dense layout), UNDEFINED and
 * codes this header does not know. */
static inline size_t onyx_dtype_size(int32_t dtype) {
  switch (dtype) {
    case ONYX_DTYPE_UINT8: case ONYX_DTYPE_INT8: case ONYX_DTYPE_BOOL:
    case ONYX_DTYPE_FLOAT8E4M3FN: case ONYX_DTYPE_FLOAT8E4M3FNUZ:
    case ONYX_DTYPE_FLOAT8E5M2: case ONYX_DTYPE_FLOAT8E5M2FNUZ:
    case ONYX_DTYPE_FLOAT8E8M0:
      return 1;
    case ONYX_DTYPE_UINT16: case ONYX_DTYPE_INT16: case ONYX_DTYPE_FLOAT16:
    case ONYX_DTYPE_BFLOAT16:
      return 2;
    case ONYX_DTYPE_FLOAT32: case ONYX_DTYPE_INT32: case ONYX_DTYPE_UINT32:
      return 4;
    case ONYX_DTYPE_FLOAT64: case ONYX_DTYPE_INT64: case ONYX_DTYPE_UINT64:
    case ONYX_DTYPE_COMPLEX64:
      return 8;
    case ONYX_DTYPE_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

/* Elements packed into one byte: 2 for the 4-bit types, 4 for the 2-bit
 * types, 0 for every other code. */
static inline size_t onyx_dtype_elements_per_byte(int32_t dtype) {
  switch (dtype) {
    case ONYX_DTYPE_UINT4: case ONYX_DTYPE_INT4: case ONYX_DTYPE_FLOAT4E2M1:
      return 2;
    case ONYX_DTYPE_UINT2: case ONYX_DTYPE_INT2:
      return 4;
    default:
      return 0;
  }
}

/* Bytes that `count` dense elements occupy: count * onyx_dtype_size, or for
 * the packed sub-byte types the bytes rounded up (3 int4 take 2 bytes).
 * 0 when count <= 0 and for types without a dense layout (STRING,
 * UNDEFINED, unknown codes): callers that must tell those apart check
 * onyx_dtype_storage_bytes(dtype, 1) > 0. */
static inline size_t onyx_dtype_storage_bytes(int32_t dtype, int64_t count) {
  size_t per_byte = onyx_dtype_elements_per_byte(dtype);
  if (count <= 0) return 0;
  if (per_byte) return ((size_t)count + per_byte - 1) / per_byte;
  return (size_t)count * onyx_dtype_size(dtype);
}

/* The type's lowercase name ("float32", "bfloat16", "int4", ...), a static
 * string. NULL for codes this header does not know. */
static inline const char* onyx_dtype_name(int32_t dtype) {
  static const char* const names[] = {
      "undefined", "float32", "uint8", "int8", "uint16", "int16", "int32",
      "int64", "string", "bool", "float16", "float64", "uint32", "uint64",
      "complex64", "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz",
      "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1",
      "float8e8m0", "uint2", "int2"};
  if (dtype < 0 || (size_t)dtype >= sizeof names / sizeof names[0]) return NULL;
  return names[dtype];
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONYX_DTYPE_H_ */
