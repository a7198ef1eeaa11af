// matmul_shape.h: the numpy matmul shape rules shared by MatMul (matmul.cpp)
// and MatMulInteger / QLinearMatMul (quantized_matmul.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace onyx::cpu::linalg {

// A numpy matmul: [..., M, K] x [..., K, N] with broadcast batch dims; a 1-D
// A is [1, K] and a 1-D B is [K, 1], the added dim dropped from Y.
struct MatMulShape {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> y_dims;
  // For each Y matrix (in order), the index of the A and B matrix it uses.
  std::vector<int64_t> a_index, b_index;
  // One B matrix and A's matrices in Y's order: A folds into [batch * M, K].
  bool fold_a = false;
  int64_t batch() const { return int64_t(a_index.size()); }
};

// Fills *s for A of dims `a` times B of dims `b`: "" or why they do not fit.
std::string matmul_shape(std::span<const int64_t> a, std::span<const int64_t> b, MatMulShape* s);

}  // namespace onyx::cpu::linalg
