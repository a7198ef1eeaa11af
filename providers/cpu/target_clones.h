// target_clones.h: ONYX_CLONES compiles a loop once per vector ISA (AVX-512,
// AVX2, baseline) and picks the running CPU's version when the library is
// loaded (GCC function multi-versioning through an ifunc resolver).
#pragma once

#if defined(__SANITIZE_THREAD__)
// Under TSan the resolver, instrumented like any function, runs while the
// dynamic linker relocates an executable that links these kernels
// statically (the unit tests), before TSan's runtime exists, and crashes.
// The race checks need only one version.
#define ONYX_CLONES
#else
#define ONYX_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
