// transpose_tiles.h: 2-D transposes of 4-byte elements in 8 x 8 register
// tiles (transpose_tiles_avx2.cpp). Transpose's tiled path (layout.cpp)
// moved one element at a time: an attention head's 64 x 16 K^T in training
// ran at 2 GB/s (0.52-0.56 ms for 1 MB; now 0.17-0.32). Private to the CPU
// provider.
#pragma once

#include <cstdint>

namespace onyx::cpu::transpose_tiles {

// Whether this build and CPU run transpose32 (AVX2).
bool supported();

// dst[r * dst_ld + c] = src[c * src_ld + r] for r < rows, c < cols: the
// rows x cols transpose of the cols x rows matrix at src. src and dst do not
// overlap. Thread-safe (writes only dst); call only when supported().
void transpose32(const uint32_t* src, int64_t src_ld, uint32_t* dst, int64_t dst_ld, int64_t rows, int64_t cols);

}  // namespace onyx::cpu::transpose_tiles
