// transpose_tiles.cpp: whether this CPU runs transpose_tiles_avx2.cpp (this
// file is compiled for every CPU, so the check itself runs anywhere).
#include "kernels/shape/transpose_tiles.h"

namespace onyx::cpu::transpose_tiles {

bool supported() {
#if defined(ONYX_CPU_AVX2_LOOPS)
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
#else
  return false;
#endif
}

}  // namespace onyx::cpu::transpose_tiles
