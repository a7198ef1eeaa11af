// qgemm_test.cpp: onyx::cpu::qgemm against an int64 reference on every
// microkernel this CPU runs, for every uint8/int8 mix, zero points per tensor,
// per row and per column, transposed A, odd K, and blockings small enough to
// cross every loop boundary. Integer results must be exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gemm/qgemm.h"
#include "gemm/qgemm_internal.h"

namespace onyx::cpu {
namespace {

using qgemm_detail::QBlocking;
using qgemm_detail::QKernelSet;

struct Case {
  int64_t m, n, k;
  bool a_signed, b_signed, trans_a;
  bool a_zero_per_row, b_zero_per_col;
  bool trans_b = false;       // B stored n x k
  bool b_row_pointers = false;  // B's rows given as pointers, stored bottom row first
};

// Both layouts' portable sets, and every x86 set this CPU runs.
std::vector<const QKernelSet*> kernels() {
  std::vector<const QKernelSet*> all{&qgemm_detail::qkernels_generic(), &qgemm_detail::qkernels_generic_quads(),
                                     &qgemm_detail::qkernels_generic_tiles()};
#ifdef __x86_64__
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    all.push_back(&qgemm_detail::qkernels_avx2());
    // Uniform random bytes: corrections everywhere.
    all.push_back(&qgemm_detail::qkernels_avx2_bytes_a());
    all.push_back(&qgemm_detail::qkernels_avx2_bytes_b());
  }
  if (qgemm_detail::avx512vnni_supported()) all.push_back(&qgemm_detail::qkernels_avx512vnni());
  if (qgemm_detail::amx_supported()) all.push_back(&qgemm_detail::qkernels_amx());
#endif
  return all;
}

// Two real threads, each running whole chunks, so that tiles are computed
// concurrently as in the provider.
ParallelFor two_threads() {
  ParallelFor pf;
  pf.threads = 2;
  pf.run = [](size_t n, const std::function<void(size_t, size_t)>& body) {
    std::thread other([&] { body(0, n / 2); });
    body(n / 2, n);
    other.join();
  };
  return pf;
}

void run_case(const Case& c, const QKernelSet* kernel, const QBlocking& blocking, const ParallelFor& pf,
              bool prepacked_a = false) {
  SCOPED_TRACE(std::string(kernel->name) + " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
               " a_signed=" + std::to_string(c.a_signed) + " b_signed=" + std::to_string(c.b_signed) +
               " trans_a=" + std::to_string(c.trans_a));
  std::mt19937 rng(uint32_t(c.m * 131 + c.n * 17 + c.k));
  std::uniform_int_distribution<int> byte(0, 255);
  const int64_t lda = (c.trans_a ? c.m : c.k) + 3, ldb = (c.trans_b ? c.k : c.n) + 1, ldc = c.n + 2;
  std::vector<uint8_t> a(size_t((c.trans_a ? c.k : c.m) * lda)), b(size_t((c.trans_b ? c.n : c.k) * ldb));
  for (auto& v : a) v = uint8_t(byte(rng));
  for (auto& v : b) v = uint8_t(byte(rng));
  auto value = [](const std::vector<uint8_t>& x, size_t at, bool is_signed) {
    return is_signed ? int64_t(int8_t(x[at])) : int64_t(x[at]);
  };
  // Extreme zero points included: (x - z) then spans the whole [-255, 255].
  std::vector<int32_t> za(size_t(c.a_zero_per_row ? c.m : 1)), zb(size_t(c.b_zero_per_col ? c.n : 1));
  for (size_t i = 0; i < za.size(); ++i) za[i] = c.a_signed ? (i % 2 ? 127 : -128) : (i % 2 ? 255 : 0);
  for (size_t j = 0; j < zb.size(); ++j) zb[j] = c.b_signed ? (j % 3 ? -128 : 5) : (j % 3 ? 255 : 3);

  // Row pointers: the same matrix stored upside down, each row found by its pointer.
  std::vector<uint8_t> flipped(b.size());
  std::vector<const uint8_t*> rows(size_t(c.k));
  for (int64_t r = 0; r < c.k; ++r) {
    std::copy_n(b.begin() + r * ldb, ldb, flipped.begin() + (c.k - 1 - r) * ldb);
    rows[size_t(r)] = flipped.data() + (c.k - 1 - r) * ldb;
  }
  QMatrix bm{b.data(), c.b_signed, ldb, c.trans_b};
  if (c.b_row_pointers) bm = {nullptr, c.b_signed, 0, false, rows.data()};
  PackedQB packed;
  qgemm_detail::pack_qb_with(*kernel, bm, c.k, c.n, zb.data(), int64_t(zb.size()), &packed, pf);
  std::vector<int32_t> out(size_t(c.m * ldc), 7777);  // padding columns must stay 7777
  std::vector<std::atomic<int>> seen(size_t(c.m * c.n));
  QTileDone done = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = c0; j < c1; ++j) seen[size_t(i * c.n + j)]++;
  };
  // A packed as it goes, or once up front (prepacked_a): the same sums.
  const QMatrix am{a.data(), c.a_signed, lda, c.trans_a};
  std::shared_ptr<PackedQA> pa;
  if (prepacked_a) pa = qgemm_detail::pack_qa_with(*kernel, blocking, am, c.m, c.k, za.data(), int64_t(za.size()));
  qgemm_detail::qgemm_with(*kernel, blocking, c.m, c.n, c.k, {am, za.data(), int64_t(za.size()), pa.get()}, packed,
                           out.data(), ldc, done, pf);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      int64_t want = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        size_t ai = size_t(c.trans_a ? p * lda + i : i * lda + p);
        want += (value(a, ai, c.a_signed) - za[c.a_zero_per_row ? size_t(i) : 0]) *
                (value(b, size_t(c.trans_b ? j * ldb + p : p * ldb + j), c.b_signed) - zb[c.b_zero_per_col ? size_t(j) : 0]);
      }
      ASSERT_EQ(out[size_t(i * ldc + j)], int32_t(want)) << "at " << i << "," << j;
      ASSERT_EQ(seen[size_t(i * c.n + j)].load(), 1) << "tile reports for " << i << "," << j;
    }
    for (int64_t j = c.n; j < ldc; ++j) ASSERT_EQ(out[size_t(i * ldc + j)], 7777) << "padding written";
  }
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (bool as : {false, true})
    for (bool bs : {false, true})
      for (bool ta : {false, true}) {
        all.push_back({1, 1, 1, as, bs, ta, false, false});
        all.push_back({7, 17, 5, as, bs, ta, true, true});      // tails in every dimension, odd K
        all.push_back({13, 33, 64, as, bs, ta, false, true});
        all.push_back({50, 40, 301, as, bs, ta, true, false});  // several K blocks when shrunk
      }
  all.push_back({3, 5, 0, false, true, false, false, false});   // K == 0: C is all zeros
  all.push_back({200, 70, 1152, false, true, false, false, true});
  all.push_back({12, 100, 2051, true, false, false, true, true});  // several panel groups, K % 4 == 3
  all.push_back({7, 64, 4, false, false, true, false, false});    // exactly four panels, one quad
  for (bool bs : {false, true}) {
    all.push_back({9, 37, 23, true, bs, false, false, true, true});          // B stored n x k
    all.push_back({40, 70, 139, false, bs, false, true, true, false, true});  // B by row pointers
  }
  return all;
}

TEST(QGemm, MatchesInt64ReferenceOnEveryKernel) {
  for (const QKernelSet* kernel : kernels())
    for (const Case& c : cases()) run_case(c, kernel, QBlocking{}, {});
}

TEST(QGemm, TinyBlockingCrossesEveryBoundary) {
  QBlocking tiny;
  tiny.kc = 3, tiny.mc = 12, tiny.nc = 1;
  for (const QKernelSet* kernel : kernels())
    for (const Case& c : cases()) run_case(c, kernel, tiny, {});
}

TEST(QGemm, PrepackedAMatchesPackingAsItGoes) {
  QBlocking tiny;
  tiny.kc = 3, tiny.mc = 12, tiny.nc = 1;
  for (const QKernelSet* kernel : kernels())
    for (const Case& c : cases()) {
      run_case(c, kernel, QBlocking{}, {}, true);
      run_case(c, kernel, tiny, two_threads(), true);
    }
}

TEST(QGemm, TwoThreadsComputeEachTileOnce) {
  QBlocking tiny;
  tiny.kc = 5, tiny.mc = 6, tiny.nc = 2, tiny.min_ops_per_thread = 1;
  for (const QKernelSet* kernel : kernels())
    for (const Case& c : cases()) run_case(c, kernel, tiny, two_threads());
}

TEST(QGemm, PackRequantizeAndTapRowsMatchScalarLoopsOnEveryKernelSet) {
  std::mt19937 rng(9);
  for (const QKernelSet* ks : kernels()) {
    SCOPED_TRACE(ks->name);
    for (int64_t count : {1, 7, 16}) {  // pack_pair: one K pair of a panel
      uint8_t r0[16], r1[16];
      int16_t zero[16], dst[32];
      for (int j = 0; j < 16; ++j) r0[j] = uint8_t(rng()), r1[j] = uint8_t(rng()), zero[j] = int16_t(rng() % 256);
      for (bool second : {true, false}) {
        ks->pack_pair_u8(r0, second ? r1 : nullptr, count, zero, dst);
        for (int64_t j = 0; j < 16; ++j) {
          ASSERT_EQ(dst[2 * j], j < count ? r0[j] - zero[j] : 0) << j;
          ASSERT_EQ(dst[2 * j + 1], j < count && second ? r1[j] - zero[j] : 0) << j;
        }
      }
    }
    // requantize: ties round to even, both ends saturate.
    std::vector<int32_t> acc = {-7, -5, -3, -1, 1, 3, 5, 7, 1000000, -1000000, 2147483647, -2147483647 - 1, 0, 2};
    std::vector<uint8_t> yu(acc.size());
    std::vector<int8_t> ys(acc.size());
    const qgemm_detail::QuantOut qu{1.0, 0.5, 100.0, 0.0, 255.0}, qs{1.0, 0.5, -3.0, -128.0, 127.0};
    ks->requant_u8(acc.data(), int64_t(acc.size()), qu, yu.data());
    ks->requant_s8(acc.data(), int64_t(acc.size()), qs, ys.data());
    for (size_t i = 0; i < acc.size(); ++i) {
      const double real = std::nearbyint((double(acc[i]) + 1.0) * 0.5);
      ASSERT_EQ(yu[i], std::clamp(real + 100.0, 0.0, 255.0)) << acc[i];
      ASSERT_EQ(ys[i], std::clamp(real - 3.0, -128.0, 127.0)) << acc[i];
    }
    // dequant_row: a float32 multiply, then an add, each rounded (never one
    // fused multiply-add), every tail length.
    {
      std::vector<int32_t> sums(45);
      std::vector<float> sc(45), bias(45), y(45);
      for (size_t j = 0; j < sums.size(); ++j)
        sums[j] = int32_t(rng() % 2000001) - 1000000, sc[j] = 1.0f / float(3 + j), bias[j] = float(j) / 7.0f;
      ks->dequant_row(sums.data(), 45, sc.data(), bias.data(), y.data());
      for (size_t j = 0; j < sums.size(); ++j) {
        volatile float product = float(sums[j]) * sc[j];  // rounded on its own
        ASSERT_EQ(y[j], product + bias[j]) << j;
      }
    }
  }
}

// The output stage of every kernel set equals the float64 one (the generic
// set's requant_impl) on every value: random multipliers and biases (|bias|
// above and below the 2^22 where AVX-512 leaves its float32 path), sums over
// all of int32, sums whose product lies a hair from a half-way point (where
// float32 alone would round either way), and cancellation of large sums
// against large biases.
TEST(QGemm, RequantizationEqualsFloat64OnEveryKernelSet) {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> log_m(-14.0, 3.0), unit(0.0, 1.0);
  const QKernelSet& reference = qgemm_detail::qkernels_generic();
  std::vector<int32_t> acc(4099);
  std::vector<uint8_t> want_u(acc.size()), got_u(acc.size());
  std::vector<int8_t> want_s(acc.size()), got_s(acc.size());
  for (int round = 0; round < 300; ++round) {
    // Absurd multipliers too (scale ratios a model may hold): beyond float32's range and below.
    const double m = round == 7 ? 1.0e300 : round == 8 ? 1.0e-300 : round == 9 ? 3.0e38 : std::exp2(log_m(rng));
    const double bias = round % 3 == 0 ? std::floor((unit(rng) - 0.5) * 3.0e7) : std::floor((unit(rng) - 0.5) * 2000.0);
    const double zero_u = std::floor(unit(rng) * 256.0), zero_s = std::floor(unit(rng) * 256.0) - 128.0;
    for (size_t i = 0; i < acc.size(); ++i) {
      switch (i % 4) {
        case 0:  // anywhere in int32
          acc[i] = int32_t(uint32_t(rng()));
          break;
        case 1: {  // (acc + bias) * m a hair from k + 0.5
          const double k = std::floor(unit(rng) * 600.0) - 300.0;
          // The nudge of -1..1 in int64: at int32's ends it would overflow.
          const int64_t near = int64_t(std::clamp(std::nearbyint((k + 0.5) / m - bias), -2147483648.0, 2147483647.0));
          acc[i] = int32_t(std::clamp<int64_t>(near + int64_t(rng() % 3) - 1, INT32_MIN, INT32_MAX));
          break;
        }
        case 2:  // cancels the bias
          acc[i] = int32_t(-bias) + int32_t(rng() % 201) - 100;
          break;
        default:  // results in range
          acc[i] = int32_t(std::clamp((unit(rng) * 512.0 - 256.0) / m - bias, -2147483648.0, 2147483647.0));
      }
    }
    const qgemm_detail::QuantOut qu{bias, m, zero_u, 0.0, 255.0}, qs{bias, m, zero_s, -128.0, 127.0};
    reference.requant_u8(acc.data(), int64_t(acc.size()), qu, want_u.data());
    reference.requant_s8(acc.data(), int64_t(acc.size()), qs, want_s.data());
    for (const QKernelSet* ks : kernels()) {
      SCOPED_TRACE(std::string(ks->name) + " m=" + std::to_string(m) + " bias=" + std::to_string(bias));
      for (int64_t count : {int64_t(acc.size()), int64_t(13)}) {  // the tails
        ks->requant_u8(acc.data(), count, qu, got_u.data());
        ks->requant_s8(acc.data(), count, qs, got_s.data());
        for (int64_t i = 0; i < count; ++i) {
          ASSERT_EQ(got_u[size_t(i)], want_u[size_t(i)]) << "acc " << acc[size_t(i)];
          ASSERT_EQ(got_s[size_t(i)], want_s[size_t(i)]) << "acc " << acc[size_t(i)];
        }
      }
    }
  }
}

// The range and float32 -> uint8 steps of DynamicQuantizeLinear against the
// scalar definition: NaN skipped by the range and sent to 0 by quantizing,
// infinities and huge values saturated, exact ties to even, every tail length.
TEST(QGemm, RangeAndQuantizeMatchScalarLoopsOnEveryKernelSet) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> d(-3.0f, 5.0f);
  const float s = 0.03125f;  // a power of two: x / s is exact, so ties are exact too
  for (const QKernelSet* ks : kernels()) {
    SCOPED_TRACE(ks->name);
    for (int64_t n : {0, 1, 15, 16, 17, 31, 32, 33, 100}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (auto& v : x) v = d(rng);
      for (int64_t i = 0; i < n; i += 7) x[size_t(i)] = float(int(rng() % 200) - 100) * s + 0.5f * s;  // ties
      if (n > 3) x[2] = std::nanf(""), x[3] = -std::numeric_limits<float>::infinity();
      if (n > 20) x[20] = 1e30f, x[19] = -7.5f;
      float lo = 0, hi = 0, want_lo = 0, want_hi = 0;
      ks->range(x.data(), n, &lo, &hi);
      for (float v : x) want_lo = v < want_lo ? v : want_lo, want_hi = v > want_hi ? v : want_hi;
      ASSERT_EQ(lo, want_lo) << n;
      ASSERT_EQ(hi, want_hi) << n;
      std::vector<uint8_t> y(static_cast<size_t>(n));
      ks->quantize_u8(x.data(), n, s, 100.0f, y.data());
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[size_t(i)];
        const double q = std::isnan(v) ? 0.0 : std::clamp(std::nearbyint(double(v / s)) + 100.0, 0.0, 255.0);
        ASSERT_EQ(y[size_t(i)], uint8_t(q)) << "n " << n << " element " << i << " = " << v;
      }
    }
  }
}

TEST(QGemm, PublicEntryUsesTheBestKernel) {
  const std::string isa = qgemm_isa();
  EXPECT_TRUE(isa == "amx" || isa == "avx512vnni" || isa == "avx2" || isa == "generic") << isa;
  const uint8_t a[4] = {1, 2, 3, 4};  // [[1, 2], [3, 4]] - 1
  const int8_t b[4] = {1, -1, 2, 5};  // [[1, -1], [2, 5]]
  const int32_t za = 1, zb = 0;
  auto packed = pack_qb({b, true, 2, false}, 2, 2, &zb, 1);
  int32_t c[4] = {};
  qgemm(2, 2, 2, {a, false, 2, false}, &za, 1, *packed, c, 2);
  EXPECT_EQ(c[0], 2);   // 0*1 + 1*2
  EXPECT_EQ(c[1], 5);   // 0*-1 + 1*5
  EXPECT_EQ(c[2], 8);   // 2*1 + 3*2
  EXPECT_EQ(c[3], 13);  // 2*-1 + 3*5
}

// Weights as trained models have them (small, 0.3% of K pairs with |w0| +
// |w1| > 128: -128, -128 and 127, 127 and 100, -29...) or as untrained ones
// (uniform over int8: about half the pairs), [lines x k] row-major.
std::vector<int8_t> weights(int64_t lines, int64_t k, bool trained, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int8_t> w(size_t(lines * k));
  for (auto& v : w) v = trained ? int8_t(int(rng() % 61) - 30) : int8_t(rng());
  const int8_t hard[][2] = {{-128, -128}, {127, 127}, {100, -29}, {-1, -128}, {64, 65}};
  if (trained)
    for (int64_t at = 0, h = 0; at + 1 < int64_t(w.size()); at += 2 * 331, ++h)  // one pair in 331
      w[size_t(at)] = hard[h % 5][0], w[size_t(at + 1)] = hard[h % 5][1];
  return w;
}

// Whether packing once takes AVX2's bytes here (qgemm.h).
bool bytes_here() {
  const char* env = std::getenv("ONYX_QGEMM_ISA");
  return std::string(qgemm_isa()) == "avx2" && !(env && std::string(env) == "avx2");
}

// The public path of a convolution: filters packed once (pack_qa), B packed
// for them (pack_qb_into with for_a), qgemm over both, against B's largest
// bytes. Trained filters take AVX2's bytes with their corrections, untrained
// ones fall back to pairs (too many corrections); both exact.
TEST(QGemm, PrepackedFiltersMatchInt64ReferenceThroughThePublicEntry) {
  const int64_t m = 11, k = 301, n = 45;
  for (const bool trained : {true, false}) {
    const std::vector<int8_t> w = weights(m, k, trained, 5);
    std::mt19937 rng(7);
    std::vector<uint8_t> x(size_t(k * n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = i % 3 ? 255 : uint8_t(rng());
    for (const int32_t x_zero : {0, 255, 17}) {
      const int32_t w_zero = 0;
      auto packed_w = pack_qa({w.data(), true, k, false}, m, k, &w_zero, 1);
      if (bytes_here()) {
        EXPECT_EQ(packed_w->bounded_pairs, trained);
        if (trained) {
          EXPECT_GT(packed_w->corrections.size(), 0u);
        }
      }
      PackedQB packed_x;
      pack_qb_into({x.data(), false, n, false}, k, n, &x_zero, 1, &packed_x, {}, packed_w.get());
      std::vector<int32_t> c(size_t(m * n));
      qgemm(n, *packed_w, packed_x, c.data(), n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int64_t want = 0;
          for (int64_t p = 0; p < k; ++p) want += int64_t(w[size_t(i * k + p)]) * (int64_t(x[size_t(p * n + j)]) - x_zero);
          ASSERT_EQ(c[size_t(i * n + j)], int32_t(want)) << i << "," << j << " x_zero " << x_zero << " trained " << trained;
        }
    }
  }
}

// The public path of a MatMul: weights packed once (pack_qb), activations
// given unpacked, as above.
TEST(QGemm, PrepackedWeightsMatchInt64ReferenceThroughThePublicEntry) {
  const int64_t m = 13, k = 301, n = 35;
  for (const bool trained : {true, false}) {
    // Drawn n x k (a pair is two neighbours along K), stored k x n.
    const std::vector<int8_t> wt = weights(n, k, trained, 6);
    std::vector<int8_t> w(wt.size());
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) w[size_t(p * n + j)] = wt[size_t(j * k + p)];
    std::mt19937 rng(8);
    std::vector<uint8_t> x(size_t(m * k));
    for (size_t i = 0; i < x.size(); ++i) x[i] = i % 3 ? 255 : uint8_t(rng());
    for (const int32_t x_zero : {0, 255, 17}) {
      const int32_t w_zero = 0;
      auto packed_w = pack_qb({w.data(), true, n, false}, k, n, &w_zero, 1);
      if (bytes_here()) {
        EXPECT_EQ(packed_w->bounded_pairs, trained);
        if (trained) {
          EXPECT_GT(packed_w->corrections.size(), 0u);
        }
      }
      std::vector<int32_t> c(size_t(m * n));
      qgemm(m, n, k, {x.data(), false, k, false}, &x_zero, 1, *packed_w, c.data(), n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int64_t want = 0;
          for (int64_t p = 0; p < k; ++p) want += (int64_t(x[size_t(i * k + p)]) - x_zero) * int64_t(w[size_t(p * n + j)]);
          ASSERT_EQ(c[size_t(i * n + j)], int32_t(want)) << i << "," << j << " x_zero " << x_zero << " trained " << trained;
        }
    }
  }
}

}  // namespace
}  // namespace onyx::cpu
