// qgemm.cpp: the integer GEMM driver (qgemm.h): packing with zero points
// subtracted, cache blocking, the split across threads and the portable
// microkernel.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdexcept>
#include <vector>

#include "gemm_internal.h"
#include "qgemm_internal.h"
#include "qkernel_impl.h"

namespace onyx::cpu {
namespace qgemm_detail {
namespace {

// Rows [r0, r0 + rows) x K pairs [p0, p0 + kp) of op(A) into micro-panels of
// kMR rows (see QMicroKernel); rows past the end and the odd K tail are zero.
template <typename T>
void pack_a_rows(const QMatrix& a, int64_t k, const int32_t* zero, int64_t zero_count, int64_t r0,
                 int64_t rows, int64_t p0, int64_t kp, int16_t* dst) {
  const T* src = static_cast<const T*>(a.data);
  for (int64_t panel = 0; panel * kMR < rows; ++panel) {
    int16_t* out = dst + panel * kp * kMR * 2;
    const int64_t height = std::min<int64_t>(kMR, rows - panel * kMR);
    for (int i = 0; i < kMR; ++i) {
      int16_t* o = out + i * 2;
      if (i >= height) {
        for (int64_t p = 0; p < kp; ++p) o[p * kMR * 2] = o[p * kMR * 2 + 1] = 0;
        continue;
      }
      const int64_t row = r0 + panel * kMR + i;
      const auto z = int16_t(zero[zero_count == 1 ? 0 : row]);
      const T* x = src + row * a.ld + p0 * 2;
      const int64_t full = std::min(kp, k / 2 - p0);  // pairs with both halves inside K
      int64_t p = 0;
      for (; p < full; ++p) {
        o[p * kMR * 2] = int16_t(x[2 * p] - z);
        o[p * kMR * 2 + 1] = int16_t(x[2 * p + 1] - z);
      }
      for (; p < kp; ++p) o[p * kMR * 2] = int16_t(x[2 * p] - z), o[p * kMR * 2 + 1] = 0;  // odd K tail
    }
  }
}

// op(A) = X^T, X stored k x m: each K step is a contiguous run of rows.
template <typename T>
void pack_a_columns(const QMatrix& a, int64_t k, const int32_t* zero, int64_t zero_count, int64_t r0,
                    int64_t rows, int64_t p0, int64_t kp, int16_t* dst) {
  const T* src = static_cast<const T*>(a.data);
  for (int64_t panel = 0; panel * kMR < rows; ++panel) {
    int16_t* out = dst + panel * kp * kMR * 2;
    const int64_t first = r0 + panel * kMR, height = std::min<int64_t>(kMR, rows - panel * kMR);
    int16_t z[kMR] = {};
    for (int64_t i = 0; i < height; ++i) z[i] = int16_t(zero[zero_count == 1 ? 0 : first + i]);
    for (int64_t p = 0; p < kp; ++p)
      for (int h = 0; h < 2; ++h) {
        int16_t* o = out + p * kMR * 2 + h;
        const int64_t col = (p0 + p) * 2 + h;
        const T* x = src + col * a.ld + first;
        for (int64_t i = 0; i < kMR; ++i) o[i * 2] = col < k && i < height ? int16_t(x[i] - z[i]) : int16_t(0);
      }
  }
}

void pack_a(const QMatrix& a, int64_t k, const int32_t* zero, int64_t zero_count, int64_t r0,
            int64_t rows, int64_t p0, int64_t kp, int16_t* dst) {
  if (a.is_signed)
    (a.trans ? pack_a_columns<int8_t> : pack_a_rows<int8_t>)(a, k, zero, zero_count, r0, rows, p0, kp, dst);
  else
    (a.trans ? pack_a_columns<uint8_t> : pack_a_rows<uint8_t>)(a, k, zero, zero_count, r0, rows, p0, kp, dst);
}

void ukr_generic(int64_t kp, const int16_t* a, const int16_t* b, int32_t* c, int64_t ldc,
                 bool accumulate, int rows, int cols) {
  uint32_t acc[kMR][kNR] = {};  // unsigned: wraps like the vector kernels
  for (int64_t p = 0; p < kp; ++p, a += kMR * 2, b += kNR * 2)
    for (int i = 0; i < kMR; ++i)
      for (int j = 0; j < kNR; ++j)
        acc[i][j] += uint32_t(int32_t(a[i * 2]) * b[j * 2] + int32_t(a[i * 2 + 1]) * b[j * 2 + 1]);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      int32_t& out = c[i * ldc + j];
      out = int32_t(accumulate ? uint32_t(out) + acc[i][j] : acc[i][j]);
    }
}

// Built for the baseline ISA, which has no fused multiply-add to contract into.
void dequant_row_generic(const int32_t* acc, int64_t count, const float* scale, const float* bias, float* y) {
  for (int64_t j = 0; j < count; ++j) y[j] = float(acc[j]) * scale[j] + bias[j];
}

constexpr QKernelSet kGeneric = {"generic", QLayout::pairs, ukr_generic, nullptr, nullptr, pack_pair_u8, pack_pair_s8, requant_u8, requant_s8,
                                 range_impl, quantize_u8_impl, dequant_row_generic, {}, nullptr, nullptr};

}  // namespace

const QKernelSet& qkernels_generic() { return kGeneric; }

#ifdef ONYX_GEMM_X86_KERNELS
// The CPU checks live here, in a file built for the baseline ISA: the kernel
// files are built with AVX-512 (and AMX) flags, and the compiler may use
// those anywhere in them, even in a function that only asks CPUID.
bool avx512vnni_supported() {
  static const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
                                __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported;
}

bool amx_supported() {
  static const bool supported = [] {
    if (!avx512vnni_supported()) return false;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
    const bool tile = edx & (1u << 24), int8 = edx & (1u << 25);
    if (!tile || !int8) return false;
    // Linux hands out the 8 KiB tile state only to processes that ask
    // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); a kernel without AMX
    // support refuses and the VNNI set runs instead.
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }();
  return supported;
}
#endif

const QKernelSet& qkernels_best() {
  static const QKernelSet& best = [&]() -> const QKernelSet& {
    std::vector<const QKernelSet*> supported;
#ifdef ONYX_GEMM_X86_KERNELS
    if (amx_supported()) supported.push_back(&qkernels_amx());
    if (avx512vnni_supported()) supported.push_back(&qkernels_avx512vnni());
    if (gemm_detail::isa_supported(gemm_detail::Isa::avx2)) supported.push_back(&qkernels_avx2());
#endif
    supported.push_back(&qkernels_generic());
    if (const char* env = std::getenv("ONYX_QGEMM_ISA"))
      for (const QKernelSet* set : supported)
        if (std::strcmp(env, set->name) == 0) return *set;
    return *supported.front();
  }();
  return best;
}

const QKernelSet& qkernels_for(int64_t k) {
#ifdef ONYX_GEMM_X86_KERNELS
  // AMX multiplies 64 bytes of K per tile step; with fewer than two steps per
  // 32 x 32 tile its fixed per-tile work (tile stores, zero-point terms)
  // outweighs them, and VNNI's smaller tiles win (MobileNetV2's 1x1 layers,
  // K = 16..96: the int8 network 8.0 -> 7.2 ms).
  // (By name: the AMX and VNNI sets may be touched only where the CPU has them.)
  constexpr int64_t kAmxMinK = 128;
  const QKernelSet& best = qkernels_best();
  if (k < kAmxMinK && std::strcmp(best.name, "amx") == 0) return qkernels_avx512vnni();
  return best;
#else
  (void)k;
  return qkernels_best();
#endif
}

namespace {
// Bytes need a scan of the operand packed once for pairs that would saturate,
// paid once; real weights have few (ORT-quantized ResNet-18: 0.04% of pairs).
bool avx2_bytes() {
#ifdef ONYX_GEMM_X86_KERNELS
  static const bool bytes = [] {
    const char* env = std::getenv("ONYX_QGEMM_ISA");
    return std::strcmp(qkernels_best().name, "avx2") == 0 && !(env && std::strcmp(env, "avx2") == 0);
  }();
  return bytes;
#else
  return false;
#endif
}
}  // namespace

const QKernelSet& qkernels_for_packed_a(int64_t k) {
#ifdef ONYX_GEMM_X86_KERNELS
  if (avx2_bytes()) return qkernels_avx2_bytes_a();
#endif
  return qkernels_for(k);
}

const QKernelSet& qkernels_for_packed(const PackedQA& a) {
#ifdef ONYX_GEMM_X86_KERNELS
  if (a.bounded_pairs) return qkernels_avx2_bytes_a();
#endif
  return qkernels_for(a.k);
}

const QKernelSet& qkernels_for_packed(const PackedQB& b) {
#ifdef ONYX_GEMM_X86_KERNELS
  if (b.bounded_pairs) return qkernels_avx2_bytes_b();
#endif
  return qkernels_for(b.k);
}

const QKernelSet& qkernels_for_packed_b(int64_t k) {
#ifdef ONYX_GEMM_X86_KERNELS
  if (avx2_bytes()) return qkernels_avx2_bytes_b();
#endif
  return qkernels_for(k);
}

std::shared_ptr<PackedQA> pack_qa_with(const QKernelSet& kernels, const QBlocking& bl, const QMatrix& a, int64_t m,
                                       int64_t k, const int32_t* zero, int64_t zero_count) {
  auto packed = std::make_shared<PackedQA>();
  if (kernels.layout == QLayout::quads) {
    pack_qa_quads(kernels.quad_form, bl, a, m, k, zero, zero_count, packed.get());
    return packed;
  }
  packed->m = m, packed->k = k, packed->kp = (k + 1) / 2, packed->mc = bl.mc, packed->kc = bl.kc;
  packed->k_blocks = (packed->kp + bl.kc - 1) / bl.kc;
  // Blocks no larger than A needs: a depthwise layer's filters are 1 x 9.
  const int64_t m_blocks = (m + bl.mc - 1) / bl.mc;
  packed->block = std::min(bl.mc, (m + kMR - 1) / kMR * kMR) * std::min(bl.kc, packed->kp) * 2;
  const int64_t block = packed->block;
  packed->data.assign(size_t(std::max<int64_t>(m_blocks * packed->k_blocks * block, 1)), 0);
  for (int64_t mb = 0; mb < m_blocks; ++mb)
    for (int64_t kb = 0; kb < packed->k_blocks; ++kb) {
      const int64_t r0 = mb * bl.mc, p0 = kb * bl.kc;
      pack_a(a, k, zero, zero_count, r0, std::min(bl.mc, m - r0), p0, std::min(bl.kc, packed->kp - p0),
             packed->data.data() + (mb * packed->k_blocks + kb) * block);
    }
  return packed;
}

QTasks split_tasks(const QBlocking& bl, int64_t m, int64_t n, int64_t k, int64_t panels, const ParallelFor& pf) {
  QTasks tasks;
  tasks.m_blocks = (m + bl.mc - 1) / bl.mc, tasks.panels = panels;
  const double ops = 2.0 * double(m) * double(n) * double(std::max<int64_t>(k, 1));
  const auto threads = pf.run ? std::clamp<int64_t>(int64_t(ops / bl.min_ops_per_thread), 1, int64_t(pf.threads)) : 1;
  // Columns split when A is the smaller operand (each thread reads all of A
  // and its share of B) or rows are too few to share; rows alone otherwise
  // (ResNet's last layers: 512 x 4608 filters, 49 pixels).
  if (threads > 1 && (m <= n || tasks.m_blocks < 2 * threads))
    tasks.n_groups = std::clamp<int64_t>(threads, 1, std::max<int64_t>(panels, 1));
  tasks.count = tasks.m_blocks * tasks.n_groups;
  tasks.parallel = threads > 1 && tasks.count > 1;
  return tasks;
}

void qgemm_with(const QKernelSet& kernels, const QBlocking& bl, int64_t m, int64_t n, int64_t k,
                const QASource& a, const PackedQB& b, int32_t* c, int64_t ldc, const QTileDone& tile_done,
                const ParallelFor& pf) {
  if (kernels.layout == QLayout::quads)
    return qgemm_quads(kernels, bl, m, n, k, a, b, c, ldc, tile_done, pf);
  if (b.quads || (a.packed && a.packed->quads))
    throw std::logic_error("qgemm: operands packed in quads given to a pair kernel set");
  if (m <= 0 || n <= 0) return;
  const QTasks tasks = split_tasks(bl, m, n, k, b.panels, pf);

  auto body = [&](size_t lo, size_t hi) {
    thread_local std::vector<int16_t> packed_a;
    packed_a.resize(size_t((bl.mc + kMR) * bl.kc * 2));
    for (auto t = int64_t(lo); t < int64_t(hi); ++t) {
      const int64_t r0 = tasks.row_block(t) * bl.mc, rows = std::min(bl.mc, m - r0);
      const int64_t j0 = tasks.panel_begin(t), j1 = tasks.panel_end(t);
      // Columns in chunks of nc panels, each finished (all of K) and handed
      // to tile_done while its sums are still in cache. With one K block, A
      // is packed once for all chunks.
      // A's block (rows from r0, K pairs from p0): prepacked, or packed now.
      auto a_block = [&](int64_t p0, int64_t kp) -> const int16_t* {
        if (a.packed)
          return a.packed->data.data() + ((r0 / bl.mc) * a.packed->k_blocks + p0 / bl.kc) * a.packed->block;
        pack_a(a.matrix, k, a.zero, a.zero_count, r0, rows, p0, kp, packed_a.data());
        return packed_a.data();
      };
      const bool one_block = b.kp <= bl.kc;
      const int16_t* ap = one_block && b.kp > 0 ? a_block(0, b.kp) : nullptr;
      for (int64_t c0 = j0; c0 < j1; c0 += bl.nc) {
        const int64_t c1 = std::min(j1, c0 + bl.nc);
        for (int64_t p0 = 0; p0 < b.kp; p0 += bl.kc) {
          const int64_t kp = std::min(bl.kc, b.kp - p0);
          if (!one_block) ap = a_block(p0, kp);
          for (int64_t j = c0; j < c1; ++j) {
            const int16_t* bp = b.data.data() + (j * b.kp + p0) * kNR * 2;
            const int cols = int(std::min<int64_t>(kNR, n - j * kNR));
            for (int64_t i = 0; i < rows; i += kMR)
              kernels.gemm(kp, ap + (i / kMR) * kp * kMR * 2, bp, c + (r0 + i) * ldc + j * kNR, ldc,
                           p0 > 0, int(std::min<int64_t>(kMR, rows - i)), cols);
          }
        }
        finish_chunk(c, ldc, r0, rows, c0 * kNR, std::min(n, c1 * kNR), b.kp == 0, tile_done);
      }
    }
  };
  tasks.run(pf, body);
}

}  // namespace qgemm_detail

namespace {

// Rows of B two at a time: each K pair of a panel is kNR (row r, row r + 1)
// int16 pairs, read along the rows by the ISA's pack_pair loop.
template <typename T, typename PackPair>
void pack_rows(PackPair pack_pair, const uint8_t* const* rows, int64_t k, int64_t n, const int32_t* zero,
               int64_t zero_count, PackedQB* out, int64_t first, int64_t last) {
  using qgemm_detail::kNR;
  for (int64_t panel = first; panel < last; ++panel) {
    int16_t* dst = out->data.data() + panel * out->kp * kNR * 2;
    const int64_t j0 = panel * kNR, width = std::min<int64_t>(kNR, n - j0);
    int16_t z[kNR] = {};
    for (int64_t jj = 0; jj < width; ++jj) z[jj] = int16_t(zero[zero_count == 1 ? 0 : j0 + jj]);
    for (int64_t p = 0; p < out->kp; ++p, dst += kNR * 2) {
      const T* r0 = reinterpret_cast<const T*>(rows[2 * p]) + j0;
      const T* r1 = 2 * p + 1 < k ? reinterpret_cast<const T*>(rows[2 * p + 1]) + j0 : nullptr;
      pack_pair(r0, r1, width, z, dst);
    }
  }
}

// B stored transposed (n x k, e.g. weights [filters, k]): each column of B
// is a contiguous row of the source.
template <typename T>
void pack_columns(const T* b, int64_t ld, int64_t k, int64_t n, const int32_t* zero, int64_t zero_count,
                  PackedQB* out) {
  using qgemm_detail::kNR;
  std::fill(out->data.begin(), out->data.end(), int16_t(0));
  for (int64_t j = 0; j < n; ++j) {
    const auto z = int16_t(zero[zero_count == 1 ? 0 : j]);
    int16_t* dst = out->data.data() + (j / kNR) * out->kp * kNR * 2 + (j % kNR) * 2;
    const T* src = b + j * ld;
    for (int64_t r = 0; r < k; ++r) dst[(r / 2) * kNR * 2 + (r % 2)] = int16_t(src[r] - z);
  }
}

}  // namespace

void qgemm_detail::pack_qb_with(const QKernelSet& ks, const QMatrix& b, int64_t k, int64_t n, const int32_t* zero,
                                int64_t zero_count, PackedQB* out, const ParallelFor& parallel) {
  if (ks.layout == QLayout::quads) return pack_qb_quads(ks, b, k, n, zero, zero_count, out, parallel);
  out->k = k, out->n = n, out->quads = false, out->kp = (k + 1) / 2, out->panels = (n + kNR - 1) / kNR;
  out->bytes.clear();
  out->data.resize(size_t(std::max<int64_t>(out->panels * out->kp * kNR * 2, 1)));
  if (b.trans && b.is_signed)
    pack_columns(static_cast<const int8_t*>(b.data), b.ld, k, n, zero, zero_count, out);
  else if (b.trans)
    pack_columns(static_cast<const uint8_t*>(b.data), b.ld, k, n, zero, zero_count, out);
  else {
    // Row pointers: given (taps of a padded image), or every ld bytes.
    thread_local std::vector<const uint8_t*> row_scratch;
    const uint8_t* const* rows = b.rows;
    if (!rows) {
      row_scratch.resize(size_t(k));
      for (int64_t r = 0; r < k; ++r) row_scratch[size_t(r)] = static_cast<const uint8_t*>(b.data) + r * b.ld;
      rows = row_scratch.data();
    }
    // Panels are independent: a large B (a convolution's im2col, every run)
    // is packed by all threads.
    auto panels = [&](size_t first, size_t last) {
      if (b.is_signed)
        pack_rows<int8_t>(ks.pack_pair_s8, rows, k, n, zero, zero_count, out, int64_t(first), int64_t(last));
      else
        pack_rows<uint8_t>(ks.pack_pair_u8, rows, k, n, zero, zero_count, out, int64_t(first), int64_t(last));
    };
    if (parallel.run && parallel.threads > 1 && out->panels > 1 && out->panels * out->kp * kNR >= (1 << 16))
      parallel.run(size_t(out->panels), panels);
    else
      panels(0, size_t(out->panels));
  }
}

void pack_qb_into(const QMatrix& b, int64_t k, int64_t n, const int32_t* zero, int64_t zero_count,
                  PackedQB* out, const ParallelFor& parallel, const PackedQA* for_a) {
  const qgemm_detail::QKernelSet& ks = for_a ? qgemm_detail::qkernels_for_packed(*for_a) : qgemm_detail::qkernels_for(k);
  qgemm_detail::pack_qb_with(ks, b, k, n, zero, zero_count, out, parallel);
}

namespace {
// Whether an operand of lines x k bytes packed for a bounded-pairs set, with
// this many corrections, runs faster than with pairs: the byte kernel saves
// ~30% of the product, and each correction costs about what a pair's share of
// the kernel does per column (A's, vectorized: ~2x) or per row (B's, column
// updates: ~40x). Random full-range weights (untrained models) have ~49% of
// pairs out of bounds; trained ones 0.04-0.2%.
bool bytes_pay(size_t corrections, int64_t lines, int64_t k, double max_share) {
  return double(corrections) <= max_share * double(lines) * double((k + 1) / 2);
}
}  // namespace

std::shared_ptr<PackedQB> pack_qb(const QMatrix& b, int64_t k, int64_t n, const int32_t* zero,
                                  int64_t zero_count) {
  auto packed = std::make_shared<PackedQB>();
  qgemm_detail::pack_qb_with(qgemm_detail::qkernels_for_packed_b(k), b, k, n, zero, zero_count, packed.get(), {});
  if (packed->bounded_pairs && !bytes_pay(packed->corrections.size(), n, k, 0.005)) {
    *packed = PackedQB{};
    qgemm_detail::pack_qb_with(qgemm_detail::qkernels_for(k), b, k, n, zero, zero_count, packed.get(), {});
  }
  return packed;
}

void qgemm(int64_t m, int64_t n, int64_t k, const QMatrix& a, const int32_t* a_zero,
           int64_t a_zero_count, const PackedQB& b, int32_t* c, int64_t ldc,
           const QTileDone& tile_done, const ParallelFor& parallel) {
  qgemm_detail::qgemm_with(qgemm_detail::qkernels_for_packed(b), {}, m, n, k, {a, a_zero, a_zero_count}, b, c, ldc,
                           tile_done, parallel);
}

std::shared_ptr<PackedQA> pack_qa(const QMatrix& a, int64_t m, int64_t k, const int32_t* zero, int64_t zero_count) {
  auto packed = qgemm_detail::pack_qa_with(qgemm_detail::qkernels_for_packed_a(k), {}, a, m, k, zero, zero_count);
  if (packed->bounded_pairs && !bytes_pay(packed->corrections.size(), m, k, 0.05))
    packed = qgemm_detail::pack_qa_with(qgemm_detail::qkernels_for(k), {}, a, m, k, zero, zero_count);
  return packed;
}

void qgemm(int64_t n, const PackedQA& a, const PackedQB& b, int32_t* c, int64_t ldc, const QTileDone& tile_done,
           const ParallelFor& parallel) {
  qgemm_detail::qgemm_with(qgemm_detail::qkernels_for_packed(a), {}, a.m, n, a.k, {{}, nullptr, 0, &a}, b, c, ldc,
                           tile_done, parallel);
}

const char* qgemm_isa() { return qgemm_detail::qkernels_best().name; }

void float_range(const float* x, int64_t count, float* lo, float* hi) {
  *lo = 0, *hi = 0;
  qgemm_detail::qkernels_best().range(x, count, lo, hi);
}

void quantize_to_u8(const float* x, int64_t count, float scale, float zero, uint8_t* y) {
  qgemm_detail::qkernels_best().quantize_u8(x, count, scale, zero, y);
}

void requantize_row(const int32_t* acc, int64_t count, double bias, double multiplier, double zero, bool is_signed,
                    void* y) {
  const qgemm_detail::QKernelSet& ks = qgemm_detail::qkernels_best();
  const qgemm_detail::QuantOut q{bias, multiplier, zero, is_signed ? -128.0 : 0.0, is_signed ? 127.0 : 255.0};
  if (is_signed)
    ks.requant_s8(acc, count, q, static_cast<int8_t*>(y));
  else
    ks.requant_u8(acc, count, q, static_cast<uint8_t*>(y));
}

void dequantize_row(const int32_t* acc, int64_t count, const float* scale, const float* bias, float* y) {
  qgemm_detail::qkernels_best().dequant_row(acc, count, scale, bias, y);
}

}  // namespace onyx::cpu
