// gemm_internal.h: internals shared by the GEMM driver and its tests (not part
// of the provider's interface). The *_with_isa entry points let the tests and
// the benchmark run every microkernel the CPU supports, not only the best one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "gemm.h"
#include "kernel_set.h"

namespace onyx::cpu {

namespace gemm_detail {

// 64-byte aligned float storage (cache-line aligned panels; contents uninitialised).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { reset(); }
  float* data() const { return data_; }
  size_t size() const { return size_; }
  // Makes room for at least n floats; old contents are lost.
  float* reserve(size_t n);
  void reset();

 private:
  float* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gemm_detail

// op(B) in micro-panel order: K is cut into blocks of `kc` rows; block k0
// (kb = min(kc, k - k0) rows) starts at data + k0 * n_padded and holds
// n_padded / NR micro-panels of kb * NR floats, the last one zero-padded.
struct PackedB {
  gemm_detail::Isa isa = gemm_detail::Isa::generic;
  int64_t k = 0, n = 0;
  int64_t kc = 0;
  int64_t n_padded = 0;
  gemm_detail::AlignedBuffer data;
};

namespace gemm_detail {

const char* isa_name(Isa isa);  // "generic", "avx2", "avx512"
bool isa_supported(Isa isa);
// The best supported ISA; ONYX_SGEMM_ISA=generic|avx2|avx512 in the
// environment picks a (supported) one instead, for debugging.
Isa best_isa();
const KernelSet& kernel_set(Isa isa);

// The driver's choices that are not the kernel set's (all measured on the
// development machine, a 2-core Zen 4 VM; see gemm.cpp for the strategies).
struct DriverOptions {
  int64_t small_m = 512;                // up to this many rows, small_m() beats blocked()
  int64_t aliasing_ldb = 1024;          // B rows this many floats apart (4 KB) alias in cache: blocked() packs them
  int64_t b_in_place_rows = 24;         // more rows than this, and blocked() packs a B that small_m() would read in
                                        // place (strided rows, once per tile: 128 x 768 x 768 on a Zen 3 VM, 44 -> 72
                                        // GFLOP/s packed)
  int64_t pack_a_cols = 768;            // a task with this many columns packs A, else reads it in place (ViT-B/16, 197 rows:
                                        // -3%; 1024^3 on a Zen 3 VM, whose 512 KB L2 holds fewer rows 4 KB apart: +15%)
  int64_t small_m_cols_split_a_bytes = 128 << 10;  // small_m() splits the columns of a wider B with this small an A
  int64_t small_m_shared_b_bytes = 256 << 10;       // ... and a B over this size (smaller: each core reads all of it)
  int64_t panels_group_bytes = 16 << 10;  // small_m()'s DirectPanelsKernel calls span this much of B (an L1 half)
  double flops_per_b_byte = 2.8;        // few rows: a byte of B weighs this (1 x 784 x 256, 0.8 MB of B: 2 threads)
  double min_flops_per_thread = 1.0e6;  // less per thread, and the split costs more than it saves (0.5e6 made MLP batch 16 slower)
};

// Where the driver takes op(B) from: the caller's matrix, or a PackedB.
struct BSource {
  bool trans = false;
  const float* b = nullptr;
  int64_t ldb = 0;
  const PackedB* packed = nullptr;

  // op(B)(k0, j0) as stored, for packing.
  const float* at(int64_t k0, int64_t j0) const { return trans ? b + j0 * ldb + k0 : b + k0 * ldb + j0; }
};

// The whole GEMM with a given kernel set; tests pass copies of the real sets
// with tiny blocking so that every loop boundary is crossed on small inputs.
// A PackedB in `src` must come from pack_b_with_kernels() with the same set.
void driver(const KernelSet& ks, const DriverOptions& opt, bool trans_a, int64_t m, int64_t n, int64_t k,
            float alpha, const float* a, int64_t lda, const BSource& src, float beta, float* c, int64_t ldc,
            const ParallelFor& pf, const GemmEpilogue& epilogue = {});
std::shared_ptr<PackedB> pack_b_with_kernels(const KernelSet& ks, bool trans_b, int64_t k, int64_t n,
                                             const float* b, int64_t ldb);

void sgemm_with_isa(Isa isa, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                    float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float beta, float* c, int64_t ldc, const ParallelFor& parallel = {},
                    const GemmEpilogue& epilogue = {});
std::shared_ptr<PackedB> pack_b_with_isa(Isa isa, bool trans_b, int64_t k, int64_t n,
                                         const float* b, int64_t ldb);

}  // namespace gemm_detail
}  // namespace onyx::cpu
