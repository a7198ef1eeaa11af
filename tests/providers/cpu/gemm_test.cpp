// gemm_test.cpp: onyx::cpu::sgemm / sgemm_packed against a float64 reference,
// on every microkernel this CPU can run (generic, avx2, avx512).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gemm/gemm.h"
#include "gemm/gemm_internal.h"

namespace onyx::cpu {
namespace gemm_detail {
void PrintTo(Isa isa, std::ostream* os) { *os << isa_name(isa); }  // readable GetParam() in failures
}  // namespace gemm_detail

namespace {

using gemm_detail::Isa;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kGuard = 12345.0f;  // fills C's padding, which must stay untouched

struct Case {
  bool ta = false, tb = false;
  int64_t m = 1, n = 1, k = 1;
  float alpha = 1.0f, beta = 0.0f;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0;  // leading dimension minus width
  bool integers = false;                    // small integers: every result exact
  bool bias = false, relu = false;          // the epilogue: C = act(C + bias[j])
  bool halve = false;                       // and then its activation function: scale() by 1/2
  bool residual = false;                    // and then a residual matrix added (row stride n + 1)
  bool row_bias = false, clamp = false;     // after the Relu: + row_bias[i], clamped to [kLo, kHi]
};

constexpr float kLo = -2.5f, kHi = 3.0f;

// An epilogue activation whose exact result the check knows: y = x times its
// parameter, which epilogue_of sets to 1/2.
void scale(const float* x, float* y, size_t n, float by) {
  for (size_t i = 0; i < n; ++i) y[i] = by * x[i];
}

std::string describe(const Case& c) {
  return std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N") + " m=" + std::to_string(c.m) +
         " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + " pads=" + std::to_string(c.pad_a) + "," +
         std::to_string(c.pad_b) + "," + std::to_string(c.pad_c) + (c.bias ? " +bias" : "") + (c.relu ? " relu" : "") +
         (c.halve ? " halve" : "") + (c.residual ? " +residual" : "") + (c.row_bias ? " +row_bias" : "") +
         (c.clamp ? " clamp" : "");
}

// Operands as stored: op(A) is m x k, op(B) is k x n; padding holds NaN so
// that any read outside the matrices poisons the result.
struct Problem {
  Case cs;
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, c, bias, residual, row_bias;

  explicit Problem(const Case& c_, uint32_t seed) : cs(c_) {
    const int64_t a_rows = cs.ta ? cs.k : cs.m, a_cols = cs.ta ? cs.m : cs.k;
    const int64_t b_rows = cs.tb ? cs.n : cs.k, b_cols = cs.tb ? cs.k : cs.n;
    lda = a_cols + cs.pad_a;
    ldb = b_cols + cs.pad_b;
    ldc = cs.n + cs.pad_c;
    std::mt19937 rng(seed);
    auto value = [&](float range) {
      return cs.integers ? float(int(rng() % uint32_t(2 * range + 1)) - int(range))
                         : std::uniform_real_distribution<float>(-range, range)(rng);
    };
    auto fill = [&](std::vector<float>& v, int64_t rows, int64_t cols, int64_t ld, float range, float pad) {
      v.assign(size_t(std::max<int64_t>(rows * ld, 1)), pad);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) v[size_t(i * ld + j)] = value(range);
    };
    fill(b, b_rows, b_cols, ldb, 3.0f, kNaN);  // B first: same seed and shape, same B
    fill(a, a_rows, a_cols, lda, 2.0f, kNaN);
    fill(c, cs.m, cs.n, ldc, 4.0f, kGuard);
    if (cs.bias) fill(bias, 1, cs.n, cs.n, 4.0f, kNaN);
    if (cs.residual) fill(residual, cs.m, cs.n, cs.n + 1, 4.0f, kNaN);  // padded: rows at their stride
    if (cs.row_bias) fill(row_bias, 1, cs.m, cs.m, 4.0f, kNaN);
    if (cs.beta == 0.0f)  // beta == 0 must not read C: NaN would show through
      for (int64_t i = 0; i < cs.m; ++i)
        for (int64_t j = 0; j < cs.n; ++j) c[size_t(i * ldc + j)] = kNaN;
  }
  float op_a(int64_t i, int64_t p) const { return cs.ta ? a[size_t(p * lda + i)] : a[size_t(i * lda + p)]; }
  float op_b(int64_t p, int64_t j) const { return cs.tb ? b[size_t(j * ldb + p)] : b[size_t(p * ldb + j)]; }

  // Compares `got` (C after the call) with the float64 result.
  //
  // Tolerance: a float dot product of length k, summed in any order, with or
  // without FMA, is within gamma_k * sum|a_p b_p| of the exact value, where
  // gamma_k ~= k * u and u = 2^-24 (Higham, Accuracy and Stability of
  // Numerical Algorithms, 3.1). Scaling by alpha, adding beta * C, and storing
  // partial sums to C once per KC block add a few roundings more, so
  // (k + 8) * FLT_EPSILON (= 2u) times the magnitude bound covers it with 2x
  // to spare. Integer cases are exact: every product and partial sum is an
  // integer below 2^24.
  void check(const std::vector<float>& got, const std::string& what) const {
    // Dense float64 copies of op(A), op(B); then sum and magnitude row by
    // row (i, p, j order: contiguous inner loop, quick even unoptimised).
    const int64_t m = cs.m, n = cs.n, k = cs.k;
    std::vector<double> da(size_t(m * k)), db(size_t(k * n)), sum(size_t(m * n)), mag(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) da[size_t(i * k + p)] = op_a(i, p);
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) db[size_t(p * n + j)] = op_b(p, j);
    for (int64_t i = 0; i < m; ++i) {
      double* s = sum.data() + i * n;
      double* g = mag.data() + i * n;
      for (int64_t p = 0; p < k; ++p) {
        const double av = da[size_t(i * k + p)];
        const double* bp = db.data() + p * n;
        for (int64_t j = 0; j < n; ++j) {
          s[j] += av * bp[j];
          g[j] += std::fabs(av * bp[j]);
        }
      }
    }
    int bad = 0;
    for (int64_t i = 0; i < m && bad < 5; ++i) {
      for (int64_t j = 0; j < ldc && bad < 5; ++j) {
        const float got_ij = got[size_t(i * ldc + j)];
        if (j >= n) {
          if (got_ij != kGuard) ++bad, ADD_FAILURE() << what << ": padding of C written at " << i << "," << j;
          continue;
        }
        double want = double(cs.alpha) * sum[size_t(i * n + j)];
        double bound = std::fabs(double(cs.alpha)) * mag[size_t(i * n + j)];
        if (cs.beta != 0.0f) {
          const double c0 = c[size_t(i * ldc + j)];
          want += double(cs.beta) * c0;
          bound += std::fabs(double(cs.beta) * c0);
        }
        if (cs.bias) want += bias[size_t(j)], bound += std::fabs(bias[size_t(j)]);
        if (cs.relu) want = std::max(want, 0.0);  // 1-Lipschitz: the bound holds
        if (cs.row_bias) want += row_bias[size_t(i)], bound += std::fabs(row_bias[size_t(i)]);
        if (cs.clamp) want = std::min(std::max(want, double(kLo)), double(kHi));  // 1-Lipschitz too
        if (cs.halve) want *= 0.5, bound *= 0.5;  // exact in binary
        if (cs.residual) {
          const double r = residual[size_t(i * (n + 1) + j)];
          want += r, bound += std::fabs(r);
        }
        const double tol = cs.integers ? 0.0 : double(k + 8) * FLT_EPSILON * bound + 1e-30;
        if (!(std::fabs(double(got_ij) - want) <= tol))
          ++bad, ADD_FAILURE() << what << ": C(" << i << "," << j << ") = " << got_ij << ", want " << want
                               << " (tol " << tol << ")";
      }
    }
  }
};

// Runs each chunk on its own std::thread: real concurrency, odd splits.
ParallelFor spawning(size_t threads) {
  ParallelFor pf;
  pf.threads = threads;
  pf.run = [threads](size_t n, const std::function<void(size_t, size_t)>& body) {
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) {
      const size_t b = n * t / threads, e = n * (t + 1) / threads;
      if (b < e) pool.emplace_back(body, b, e);
    }
    for (auto& th : pool) th.join();
  };
  return pf;
}

// One item at a time, last first: the driver must not depend on task order.
ParallelFor reversed_items() {
  ParallelFor pf;
  pf.threads = 4;
  pf.run = [](size_t n, const std::function<void(size_t, size_t)>& body) {
    for (size_t i = n; i-- > 0;) body(i, i + 1);
  };
  return pf;
}

class SgemmTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!gemm_detail::isa_supported(GetParam())) GTEST_SKIP() << "CPU lacks " << gemm_detail::isa_name(GetParam());
  }
  const gemm_detail::KernelSet& ks() const { return gemm_detail::kernel_set(GetParam()); }

  static GemmEpilogue epilogue_of(const Case& cs, const Problem& p) {
    GemmEpilogue e;
    e.bias = cs.bias ? p.bias.data() : nullptr;
    e.relu = cs.relu;
    e.activation = cs.halve ? scale : nullptr;
    e.activation_param = 0.5f;
    e.residual = cs.residual ? p.residual.data() : nullptr;
    e.ldr = cs.n + 1;
    e.row_bias = cs.row_bias ? p.row_bias.data() : nullptr;
    if (cs.clamp) e.lo = kLo, e.hi = kHi;
    return e;
  }
  void run(const Case& cs, const ParallelFor& pf = {}, uint32_t seed = 1) {
    Problem p(cs, seed);
    std::vector<float> c = p.c;
    gemm_detail::sgemm_with_isa(GetParam(), cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, p.a.data(), p.lda,
                                p.b.data(), p.ldb, cs.beta, c.data(), p.ldc, pf, epilogue_of(cs, p));
    p.check(c, describe(cs));
  }
  void run_packed(const Case& cs, const ParallelFor& pf = {}, uint32_t seed = 1) {
    Problem p(cs, seed);
    auto packed = gemm_detail::pack_b_with_isa(GetParam(), cs.tb, cs.k, cs.n, p.b.data(), p.ldb);
    ASSERT_EQ(packed_b_k(*packed), cs.k);
    ASSERT_EQ(packed_b_n(*packed), cs.n);
    std::vector<float> c = p.c;
    sgemm_packed(cs.ta, cs.m, cs.n, cs.k, cs.alpha, p.a.data(), p.lda, *packed, cs.beta, c.data(), p.ldc, pf,
                 epilogue_of(cs, p));
    p.check(c, "packed " + describe(cs));
  }
  void tiny_blocking(bool direct, int64_t pack_a_cols);
};

TEST_P(SgemmTest, OddSizesAllTransposes) {
  const int64_t sizes[] = {1, 7, 13, 31, 100};
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : sizes)
        for (int64_t n : sizes)
          for (int64_t k : sizes) run({ta, tb, m, n, k});
}

TEST_P(SgemmTest, LargerOddSizes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      run({ta, tb, 257, 100, 257});
      run({ta, tb, 31, 257, 513});
      run({ta, tb, 100, 1, 257});
      run({ta, tb, 1, 257, 100});
      run({ta, tb, 14, 196, 40});  // a 14 x 14 plane: 8-wide last panels of 4, and of 8 at 200
      run({ta, tb, 14, 200, 40});
    }
}

TEST_P(SgemmTest, AlphaBeta) {
  const float pairs[][2] = {{1, 0}, {0.5f, 0}, {1, 1}, {-1.5f, 0.75f}, {2, -1}, {0, 0}, {0, 0.5f}};
  for (auto [alpha, beta] : pairs)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        run({ta, tb, 37, 45, 29, alpha, beta});
        run({ta, tb, 13, 70, 300, alpha, beta});
      }
}

// The epilogue (a bias row, a Relu, a bias column and a clamp, an
// activation function, a residual), applied by the microkernels or after
// them, on every driver path: few rows, many rows (blocked), one column, K blocks
// crossed, threads, packed B, and an empty product (C = act(beta * C + bias)).
TEST_P(SgemmTest, EpilogueAddsTheBiasAndAppliesTheActivations) {
  struct Form {
    bool bias, relu, halve, residual, row_bias = false, clamp = false;
  };
  for (Form f : {Form{true, false, false, false}, Form{false, true, false, false}, Form{true, true, false, false},
                 Form{true, false, true, false}, Form{false, true, true, false}, Form{false, false, false, true},
                 Form{true, false, true, true}, Form{false, false, false, false, true, true},
                 Form{false, false, false, false, false, true}, Form{true, true, false, true, true, true},
                 Form{false, false, true, true, true, true}})
    for (bool tb : {false, true}) {
      auto with = [&](Case c) {
        c.tb = tb, c.bias = f.bias, c.relu = f.relu, c.halve = f.halve, c.residual = f.residual;
        c.row_bias = f.row_bias, c.clamp = f.clamp;
        return c;
      };
      run(with({false, false, 37, 45, 29}));
      run(with({false, false, 64, 10, 128}));                  // narrow last panel
      run(with({false, false, 13, 40, 29, 1.0f, 0.5f}));       // narrow last panel, whole (8 columns)
      run(with({false, false, 13, 70, 2 * ks().kc + 5}));      // K blocks
      run(with({true, false, 700, 90, 70, 0.5f, 1.0f, 3, 1, 2}));  // blocked, beta 1, padded
      run(with({false, false, 100, 1, 257}));                  // one column
      run(with({false, false, 9, 17, 0, 1.0f, 0.5f}));         // empty product
      run(with({false, false, 257, 300, 129}), spawning(2));
      run(with({false, false, 7, 1000, 300}), spawning(3));
      run(with({false, false, 60, 500, 40}), spawning(2));  // rows enough to split, but a small A: columns split
      run_packed(with({false, false, 64, 256, 784}));
      run_packed(with({false, false, 600, 100, ks().kc + 7}), spawning(2));
    }
}

TEST_P(SgemmTest, EmptyK) {  // C = beta * C
  run({false, false, 9, 17, 0, 1.0f, 0.0f});
  run({false, false, 9, 17, 0, 1.0f, 0.5f});
}

TEST_P(SgemmTest, EmptyMOrNLeavesCAlone) {
  std::vector<float> c(16, kGuard), a(16, 1.0f), b(16, 1.0f);
  gemm_detail::sgemm_with_isa(GetParam(), false, false, 0, 4, 4, 1.0f, a.data(), 4, b.data(), 4, 0.0f, c.data(), 4);
  gemm_detail::sgemm_with_isa(GetParam(), false, false, 4, 0, 4, 1.0f, a.data(), 4, b.data(), 4, 0.0f, c.data(), 4);
  for (float v : c) EXPECT_EQ(v, kGuard);
}

TEST_P(SgemmTest, LeadingDimensionsLargerThanWidth) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      run({ta, tb, 23, 41, 19, 1.0f, 0.0f, 3, 5, 7});
      run({ta, tb, 50, 33, 70, 0.5f, 2.0f, 17, 1, 64});
    }
}

// Shapes that cross every cache-blocking boundary of this ISA's kernel set
// (several KC blocks, several NC panels, more rows than one packed A region),
// with the real blocking, in both drivers: few rows (small_m) and many
// (blocked). TinyBlocking below covers the combinations.
// Integer data makes every result exact whatever the summation order.
TEST_P(SgemmTest, CrossesBlockBoundariesExactly) {
  const int64_t kc = ks().kc, nc = ks().nc, mr = ks().mr;
  auto exact = [](Case cs) {
    cs.integers = true;
    return cs;
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      for (int64_t m : {2 * mr + 1, 513 + mr}) run(exact({ta, tb, m, 37, 2 * kc + 5, 1.0f, 0.0f}));
      run(exact({ta, tb, 5, nc + 40, kc + 1, 1.0f, 1.0f}));
      run(exact({ta, tb, 1024 + 3 * mr + 1, 21, 20, 1.0f, -2.0f}));
    }
}

TEST_P(SgemmTest, Multithreaded) {
  for (size_t threads : {2, 3, 4})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        run({ta, tb, 257, 300, 129, 1.0f, 0.0f}, spawning(threads));
        run({ta, tb, 7, 1000, 300, 0.5f, 1.0f}, spawning(threads));  // few rows: splits N
        run({ta, tb, 200, 10, 900, 1.0f, 0.0f}, spawning(threads));   // one column panel: splits M
        run({ta, tb, 600, 90, 70, 1.0f, 0.0f}, spawning(threads));    // many rows: blocked driver
        Case big{ta, tb, 1100, 40, ks().kc + 7, 1.0f, 1.0f};
        big.integers = true;
        run(big, spawning(threads));
      }
  run({false, false, 300, 200, 100, 1.0f, 0.0f}, reversed_items());
  run({true, true, 30, 700, 300, 1.0f, 0.5f}, reversed_items());
}

// One column of B takes the matrix-vector path: rows across its 256-row
// chunks, k short of, at and past its 32-wide steps, A and B with leading
// dimensions wider than their rows (B's column strided), alpha and beta,
// and threads splitting the rows.
TEST_P(SgemmTest, SingleColumn) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : {1, 5, 300})
        for (int64_t k : {1, 31, 32, 33, 1000}) {
          run({ta, tb, m, 1, k, 1.0f, 0.0f});
          run({ta, tb, m, 1, k, -1.5f, 0.75f, 3, 5, 7});
        }
  for (bool ta : {false, true}) run({ta, false, 601, 1, 777, 1.0f, 1.0f, 1, 2, 0}, spawning(3));
}

// One row of A takes the same path with B as the matrix: a row-major B read
// row by row (columns across its 1024-column chunks, k short of and past its
// 4-row steps), a transposed B row by row, A's row strided when A is
// transposed, the epilogue along the row, threads splitting the columns.
TEST_P(SgemmTest, SingleRow) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t n : {1, 5, 300, 1100})
        for (int64_t k : {1, 3, 4, 33, 1000}) {
          run({ta, tb, 1, n, k, 1.0f, 0.0f});
          run({ta, tb, 1, n, k, -1.5f, 0.75f, 3, 5, 7});
        }
  for (bool tb : {false, true}) {
    Case e{false, tb, 1, 2100, 70, 1.0f, 1.0f, 0, 2, 0};
    e.bias = e.relu = e.residual = e.row_bias = e.clamp = true;
    run(e, spawning(3));
    e.halve = true;
    run(e, reversed_items());
  }
}

// B's rows 4 KB apart (ldb a multiple of 1024 floats) send few rows to the
// blocked driver, which packs B: every thread count and row count around MR.
TEST_P(SgemmTest, AliasingRowsOfB) {
  for (int64_t m : {2, ks().mr, ks().mr + 1, 64})
    for (size_t threads : {1, 2, 3}) {
      Case c{false, false, m, 1000, 300, 0.5f, 1.0f, 0, 24, 0};
      c.integers = true;
      run(c, spawning(threads));
      run({true, false, m, 2048, 40, 1.0f, 0.0f}, spawning(threads));
    }
}

TEST_P(SgemmTest, PackedB) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      run_packed({ta, tb, 1, 1, 1});
      run_packed({ta, tb, 16, 256, 784});
      run_packed({ta, tb, 13, 31, 7, 0.5f, 1.0f, 2, 3, 4});
      Case deep{ta, tb, 40, ks().nc + 3, 2 * ks().kc + 1, 1.0f, -1.0f};
      deep.integers = true;
      run_packed(deep);
      run_packed({ta, tb, 200, 250, 300, 1.0f, 0.0f}, spawning(2));
      run_packed({ta, tb, 600, 70, 100, 1.0f, 0.5f}, spawning(3));  // many rows: blocked path
    }
}

TEST_P(SgemmTest, PackedBIsReusable) {
  Problem p({false, false, 64, 70, 90}, 7);
  auto packed = gemm_detail::pack_b_with_isa(GetParam(), false, 90, 70, p.b.data(), p.ldb);
  for (int64_t m : {64, 1, 33}) {
    Case cs{false, false, m, 70, 90, 1.5f, 0.0f};
    Problem q(cs, 7);  // same seed and B shape: same B as p
    std::vector<float> c = q.c;
    sgemm_packed(false, m, 70, 90, 1.5f, q.a.data(), q.lda, *packed, 0.0f, c.data(), q.ldc);
    q.check(c, "reused packed m=" + std::to_string(m));
  }
  std::vector<float> c(64 * 70);
  EXPECT_THROW(sgemm_packed(false, 64, 70, 91, 1.0f, p.a.data(), 91, *packed, 0.0f, c.data(), 70),
               std::invalid_argument);
}

// Each kernel set again with tiny cache blocking (KC = 5, MC = 2 MR,
// NC = 2 NR, 3 MR + 1 rows per packed A region) and threads even for tiny
// work, so that small exact problems cross every loop boundary of both
// drivers: several K blocks, column panels, row blocks and A regions, partial
// tiles at every edge, serial and threaded, with B packed ahead or not, and
// A read in place (the set's DirectKernels, where it has them) or packed:
// always, or by small_m() for tasks with enough columns; small_m()'s
// DirectPanelsKernel calls span 2 column panels (5 full ones: 2 + 2 + 1).
TEST_P(SgemmTest, TinyBlockingCrossesEveryBoundary) {
  const int64_t never = int64_t(1) << 40;
  tiny_blocking(true, never);
  tiny_blocking(true, 1);
  tiny_blocking(false, never);
}

void SgemmTest::tiny_blocking(bool direct, int64_t pack_a_cols) {
  gemm_detail::KernelSet tiny = ks();
  tiny.kc = 5;
  tiny.mc = 2 * tiny.mr;
  tiny.nc = 2 * tiny.nr;
  if (!direct) {
    std::fill(std::begin(tiny.direct), std::end(tiny.direct), nullptr);
    std::fill(std::begin(tiny.narrow_direct), std::end(tiny.narrow_direct), nullptr);
    std::fill(std::begin(tiny.direct_panels), std::end(tiny.direct_panels), nullptr);
  }
  // blocked() only, then small_m() only; small_m() with a small A splitting
  // the columns (every B counts as large), then, given 2 threads, the rows.
  for (auto [small_m, shared_b] : {std::pair{int64_t(0), int64_t(0)}, std::pair{int64_t(1) << 40, int64_t(0)},
                                   std::pair{int64_t(1) << 40, int64_t(1) << 40}}) {
    gemm_detail::DriverOptions opt;
    opt.small_m = small_m;
    opt.small_m_shared_b_bytes = shared_b;
    opt.b_in_place_rows = small_m;
    opt.pack_a_cols = pack_a_cols;
    opt.min_flops_per_thread = 1;
    opt.panels_group_bytes = 2 * tiny.kc * tiny.nr * int64_t(sizeof(float));
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (size_t threads : {1, 2, 3})
          for (float beta : {0.0f, -2.0f}) {
            Case cs{ta, tb, 7 * tiny.mr + 3, 5 * tiny.nr + 3, 17, 1.0f, beta, 1, 2, 3};
            cs.integers = true;
            const std::string what = describe(cs) + " small_m=" + std::to_string(small_m) +
                                     " shared_b=" + std::to_string(shared_b) +
                                     " threads=" + std::to_string(threads) + (direct ? "" : " packed A") +
                                     " pack_a_cols=" + std::to_string(pack_a_cols);
            Problem p(cs, 3);
            const ParallelFor pf = threads > 1 ? spawning(threads) : ParallelFor{};
            std::vector<float> c = p.c;
            gemm_detail::BSource src;
            src.trans = tb;
            src.b = p.b.data();
            src.ldb = p.ldb;
            gemm_detail::driver(tiny, opt, ta, cs.m, cs.n, cs.k, cs.alpha, p.a.data(), p.lda, src, beta,
                                c.data(), p.ldc, pf);
            p.check(c, what);

            auto packed = gemm_detail::pack_b_with_kernels(tiny, tb, cs.k, cs.n, p.b.data(), p.ldb);
            gemm_detail::BSource pre;
            pre.packed = packed.get();
            c = p.c;
            gemm_detail::driver(tiny, opt, ta, cs.m, cs.n, cs.k, cs.alpha, p.a.data(), p.lda, pre, beta,
                                c.data(), p.ldc, pf);
            p.check(c, "packed " + what);
          }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, SgemmTest, ::testing::Values(Isa::generic, Isa::avx2, Isa::avx512),
                         [](const auto& param_info) { return std::string(gemm_detail::isa_name(param_info.param)); });

TEST(Sgemm, PublicEntryPointsUseTheBestIsa) {
  EXPECT_STREQ(sgemm_isa(), gemm_detail::isa_name(gemm_detail::best_isa()));
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1};
  float c[4] = {kNaN, kNaN, kNaN, kNaN};
  sgemm(false, false, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);  // [1 2 3; 4 5 6] x [1 0; 0 1; 1 1]
  EXPECT_EQ(c[0], 4.0f);
  EXPECT_EQ(c[1], 5.0f);
  EXPECT_EQ(c[2], 10.0f);
  EXPECT_EQ(c[3], 11.0f);
  auto packed = pack_b(false, 3, 2, b, 2);
  sgemm_packed(false, 2, 2, 3, 2.0f, a, 3, *packed, 1.0f, c, 2);
  EXPECT_EQ(c[0], 12.0f);
  EXPECT_EQ(c[3], 33.0f);
}

}  // namespace
}  // namespace onyx::cpu
