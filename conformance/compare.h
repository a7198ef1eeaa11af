// compare.h: comparing a provider's output with the expected tensor, under
// the per-op tolerances of one table (tolerances.cpp) with a reason each.
#pragma once

#include <cstdint>
#include <string>

#include "values.h"

namespace onyx::conformance {

// |actual - expected| <= atol + rtol * |expected|, per element.
struct Tolerance {
  double rtol;
  double atol;
  const char* reason;
};

// The tolerance for outputs of `op` with element type `dtype`: the op's row
// of the table, widened to the precision of the element type.
Tolerance tolerance_for(const std::string& op, int32_t dtype);

// One row of the table, for the documentation and the report.
struct ToleranceRow {
  const char* op;
  double rtol;
  double atol;
  const char* reason;
};
const ToleranceRow* tolerance_table(size_t* count);

struct Comparison {
  bool ok = true;
  double max_error = 0;  // largest |actual - expected| over floating elements
  std::string message;   // first mismatch, when !ok
};

// Compares a dense output (dtype, dims, bytes) with `expected`. Integer and
// bool types (int2/int4 included) must match exactly; floating types (float4/8/16, bfloat16,
// float32/64, complex) within `tol`, NaN matching NaN and infinities equal.
Comparison compare_tensor(const HostTensor& expected, int32_t dtype, const int64_t* dims,
                          size_t rank, const void* data, const Tolerance& tol);

// Decodes element `i` of a floating tensor to double (float8/float4 and
// half types included). Exposed for tests.
double decode_float(int32_t dtype, const void* data, int64_t i);

}  // namespace onyx::conformance
