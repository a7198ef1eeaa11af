// image_lanes.cpp: whether this CPU runs image_lanes_avx2.cpp (this file is
// compiled for every CPU, so the check itself runs anywhere).
#include "kernels/conv/image_lanes.h"

namespace onyx::cpu::image_lanes {

bool supported() {
#if defined(ONYX_CPU_AVX2_LOOPS)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}

}  // namespace onyx::cpu::image_lanes
