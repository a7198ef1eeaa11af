// tensor_values.h: generating input values and summarizing output values.
#pragma once

#include <onyx/onyx.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace onyx::cli {

// A tensor of deterministic pseudo-random values (same seed, same values on
// every machine): floats uniform in [-1, 1), integers uniform in [0, 10),
// booleans 0/1. Throws CliError for types it cannot fill (strings).
onyx::Tensor random_tensor(int32_t dtype, const std::vector<int64_t>& dims, uint64_t seed);
// "uniform [-1, 1)" etc., for telling the user what random_tensor used.
std::string random_fill_description(int32_t dtype);

// Element k of `tensor` as a double (complex: the flat component k).
double element_as_double(onyx::Tensor& tensor, int64_t k);

struct ValueSummary {
  int64_t count = 0;     // values summarized (components for complex types)
  int64_t nan_count = 0; // NaNs are left out of min/max/mean
  int64_t inf_count = 0;
  double min = 0, max = 0, mean = 0;
  std::vector<double> first;  // the first few values
};
ValueSummary summarize(onyx::Tensor& tensor, size_t first_count = 8);

// "min -0.51 max 0.97 mean 0.0123" plus "first: [..]" formatted for the dtype.
std::string summary_text(const ValueSummary& summary, int32_t dtype);

}  // namespace onyx::cli
