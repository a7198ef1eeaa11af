// autotune_gemm.hpp: the "autotune" test provider's GEMM, C = A * B (+ bias),
// with B a constant packed into column panels, and the autotuner that picks
// its tiling by timing every candidate on the node's shapes. The tuning is
// the provider's "compilation": real work that takes a few hundred
// milliseconds, which the compiled-partition cache skips.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace autotune {

// One tiling: rows per tile, the panel width, the depth per pass, and the
// loop order inside a tile (0: k outside the rows, 1: rows outside k).
struct Tiling {
  int64_t tile_m = 0, tile_n = 0, tile_k = 0, order = 0;
};

inline bool valid_tiling(const Tiling& t) {
  const bool n_ok = t.tile_n == 8 || t.tile_n == 16 || t.tile_n == 32 || t.tile_n == 64;
  return n_ok && t.tile_m >= 1 && t.tile_m <= 4096 && t.tile_k >= 1 && (t.order == 0 || t.order == 1);
}

inline int64_t panels(int64_t n, int64_t tile_n) { return (n + tile_n - 1) / tile_n; }

// B [k, n] row-major as panels of tile_n columns, each k rows of tile_n
// (zero-padded past n): a panel's rows are contiguous for the inner loop.
inline std::vector<float> pack(const float* b, int64_t k, int64_t n, int64_t tile_n) {
  std::vector<float> packed(size_t(panels(n, tile_n) * k * tile_n), 0.0f);
  for (int64_t p = 0; p < panels(n, tile_n); ++p)
    for (int64_t r = 0; r < k; ++r)
      for (int64_t j = 0; j < tile_n && p * tile_n + j < n; ++j)
        packed[size_t((p * k + r) * tile_n + j)] = b[r * n + p * tile_n + j];
  return packed;
}

// C [m, n] = A [m, k] * packed B (+ bias [n], when not null).
inline void gemm(const Tiling& t, const float* a, const float* packed, const float* bias, float* c, int64_t m,
                 int64_t k, int64_t n) {
  std::vector<float> acc(size_t(t.tile_m * t.tile_n));
  for (int64_t i0 = 0; i0 < m; i0 += t.tile_m) {
    const int64_t rows = std::min(t.tile_m, m - i0);
    for (int64_t p = 0; p < panels(n, t.tile_n); ++p) {
      const float* panel = packed + p * k * t.tile_n;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t k0 = 0; k0 < k; k0 += t.tile_k) {
        const int64_t depth = std::min(t.tile_k, k - k0);
        if (t.order == 0) {
          for (int64_t r = k0; r < k0 + depth; ++r)
            for (int64_t i = 0; i < rows; ++i) {
              const float av = a[(i0 + i) * k + r];
              float* out = &acc[size_t(i * t.tile_n)];
              for (int64_t j = 0; j < t.tile_n; ++j) out[j] += av * panel[r * t.tile_n + j];
            }
        } else {
          for (int64_t i = 0; i < rows; ++i) {
            float* out = &acc[size_t(i * t.tile_n)];
            for (int64_t r = k0; r < k0 + depth; ++r) {
              const float av = a[(i0 + i) * k + r];
              for (int64_t j = 0; j < t.tile_n; ++j) out[j] += av * panel[r * t.tile_n + j];
            }
          }
        }
      }
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < t.tile_n && p * t.tile_n + j < n; ++j) {
          const int64_t col = p * t.tile_n + j;
          c[(i0 + i) * n + col] = acc[size_t(i * t.tile_n + j)] + (bias ? bias[col] : 0.0f);
        }
    }
  }
}

// Times every candidate tiling `repetitions` times on random data of the
// node's shapes (m rows: the declared batch, or 64 when unknown) and returns
// the fastest, by its best time.
inline Tiling tune(int64_t m, int64_t k, int64_t n, int repetitions) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n));
  for (float& v : a) v = uniform(random);
  for (float& v : b) v = uniform(random);
  Tiling best;
  double best_seconds = 1e30;
  for (int64_t tile_n : {8, 16, 32, 64}) {
    const std::vector<float> packed = pack(b.data(), k, n, tile_n);
    for (int64_t tile_m : {4, 16, 64})
      for (int64_t tile_k : {int64_t(32), int64_t(128), k})
        for (int64_t order : {0, 1}) {
          const Tiling t{tile_m, tile_n, std::max<int64_t>(1, tile_k), order};
          for (int r = 0; r < repetitions; ++r) {
            const auto start = std::chrono::steady_clock::now();
            gemm(t, a.data(), packed.data(), nullptr, c.data(), m, k, n);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (seconds < best_seconds) {
              best_seconds = seconds;
              best = t;
            }
          }
        }
  }
  return best;
}

}  // namespace autotune
