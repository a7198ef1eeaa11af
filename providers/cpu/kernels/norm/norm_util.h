// norm_util.h: helpers shared by the normalization kernels (batch_norm.cpp,
// row_norm.cpp).
#pragma once

#include <string>
#include <vector>

#include "kernels/nn_util.h"

namespace onyx::cpu::norm {

// y[k] = x[k] * a + b over n elements (x == y allowed); with relu, then
// negatives become 0 (NaN kept, as the Relu kernel does). float32 is compiled
// per vector ISA (batch_norm.cpp), multiply then add on every one of them:
// the same results whichever the CPU picks.
template <typename T>
void affine(const T* x, T* y, int64_t n, double a, double b, bool relu = false) {
  T ta = T(a), tb = T(b);
  for (int64_t k = 0; k < n; ++k) y[k] = x[k] * ta + tb;
  if (relu)
    for (int64_t k = 0; k < n; ++k) y[k] = y[k] < T(0) ? T(0) : y[k];
}
void affine(const float* x, float* y, int64_t n, double a, double b, bool relu = false);

// A float32/float64 parameter tensor read into doubles, checking its size.
inline OnyxStatus* read_params(const std::string& label, const sdk::Tensor& t, size_t input,
                               int64_t want, const char* what, std::vector<double>* out) {
  if (t.size() != want)
    return nn::fail(label, "input %zu (%s) has shape %s; expected %lld elements", input, what,
                    nn::dims_str(t.dims).c_str(), (long long)want);
  out->resize(size_t(want));
  for (int64_t k = 0; k < want; ++k) (*out)[size_t(k)] = nn::element_as_double(t, k);
  return nullptr;
}

}  // namespace onyx::cpu::norm
