// gemm_bench.cpp: onyx::cpu::sgemm against oneDNN's fp32 matmul.
//
//   onyx_gemm_bench [--quick] [--threads 1,2] [--shapes 1024,512x768x3072,...]
//                   [--isa generic|avx2|avx512] [--packed] [--rounds N] [--ms T]
//                   [--settle MS] [--peak] [--trans a|b|ab]
//
// --trans: A (or B, or both) stored transposed, K x M (N x K), for both
// libraries: a training step's weight gradients are X^T dY and its input
// gradients dY W^T.
// --peak: only the measured 1-core FMA peak (bench/speed/compare.py reads it).
// Shapes are MxNxK (a single number is a cube). For every shape and thread
// count it prints GFLOP/s of ours, of oneDNN, and their ratio. The two are
// timed in alternating rounds in the same process, and the medians reported,
// because this machine's throughput drifts by +-20% from minute to minute.
// GCC 12 bug 105593: its AVX-512 headers trip -W(maybe-)uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "gemm/gemm.h"
#include "gemm/gemm_internal.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace gd = onyx::cpu::gemm_detail;

// A small persistent pool: run(n, body) cuts [0, n) into one contiguous range
// per thread, the caller doing the first. Idle workers spin briefly before
// sleeping so that back-to-back regions do not pay a futex wake-up each.
class ThreadPool {
 public:
  explicit ThreadPool(size_t threads) : threads_(std::max<size_t>(threads, 1)) {
    for (size_t t = 1; t < threads_; ++t) workers_.emplace_back([this, t] { work(t); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  size_t threads() const { return threads_; }

  void run(size_t n, const std::function<void(size_t, size_t)>& body) {
    if (threads_ == 1 || n <= 1) {
      if (n) body(0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      body_ = &body;
      n_ = n;
      pending_.store(threads_ - 1);
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    chunk(0, n, body);
    while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }

 private:
  void chunk(size_t t, size_t n, const std::function<void(size_t, size_t)>& body) const {
    const size_t b = n * t / threads_, e = n * (t + 1) / threads_;
    if (b < e) body(b, e);
  }
  void work(size_t t) {
    uint64_t seen = 0;
    for (;;) {
      const auto spin_until = Clock::now() + std::chrono::microseconds(200);
      while (generation_.load() == seen && Clock::now() < spin_until) std::this_thread::yield();
      const std::function<void(size_t, size_t)>* body;
      size_t n;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return generation_.load() != seen; });
        seen = generation_.load();
        if (stop_) return;
        body = body_;
        n = n_;
      }
      chunk(t, n, *body);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  size_t threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<size_t> pending_{0};
  const std::function<void(size_t, size_t)>* body_ = nullptr;
  size_t n_ = 0;
  bool stop_ = false;
};

struct Shape {
  int64_t m, n, k;
};

struct Trans {
  bool a = false, b = false;
};

// oneDNN's fp32 matmul for one shape, created once; only execute() is timed.
class DnnlMatmul {
 public:
  DnnlMatmul(const Shape& s, Trans t, float* a, float* b, float* c) : eng_(dnnl::engine::kind::cpu, 0), strm_(eng_) {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    dnnl::memory::desc a_md({s.m, s.k}, dt::f32, t.a ? tag::ba : tag::ab), b_md({s.k, s.n}, dt::f32, t.b ? tag::ba : tag::ab),
        c_md({s.m, s.n}, dt::f32, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
    dnnl::matmul::primitive_desc pd(eng_, a_md, b_md, c_md);
#else
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), eng_);
#endif
    impl_ = pd.impl_info_str();
    prim_ = dnnl::matmul(pd);
    args_ = {{DNNL_ARG_SRC, dnnl::memory(a_md, eng_, a)},
             {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, eng_, b)},
             {DNNL_ARG_DST, dnnl::memory(c_md, eng_, c)}};
  }
  void execute() {
    prim_.execute(strm_, args_);
    strm_.wait();
  }
  const std::string& impl() const { return impl_; }

 private:
  dnnl::engine eng_;
  dnnl::stream strm_;
  dnnl::matmul prim_;
  std::unordered_map<int, dnnl::memory> args_;
  std::string impl_;
};

// Idle time before each round. OpenMP's workers keep spinning for a while
// after oneDNN returns (libgomp's default GOMP_SPINCOUNT), and on a 2-core
// machine they would steal our next round's cores; our pool's workers spin too.
double g_settle_ms = 100;

// GFLOP/s of fn over one round of about `ms` milliseconds (at least one call).
double time_round(const std::function<void()>& fn, double flops, double ms) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(g_settle_ms));
  const auto t0 = Clock::now();
  fn();
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  const int reps = std::max(1, int(ms * 1e-3 / std::max(elapsed, 1e-9)) - 1);
  const auto t1 = Clock::now();
  for (int r = 0; r < reps; ++r) fn();
  elapsed = std::chrono::duration<double>(Clock::now() - t1).count();
  return flops * reps / elapsed * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// One core's fp32 FMA peak: 12 independent FMA chains (enough to cover the
// latency x throughput of any current core) on the widest vectors we have.
// Explicit FMA intrinsics: ISO C++ mode (-std=c++20) does not contract a*b+c.
__attribute__((target("avx512f,fma"))) float fma_loop_avx512(int64_t iters) {
  __m512 acc[12];
  for (auto& v : acc) v = _mm512_set1_ps(float(iters & 1) * 1e-9f);  // opaque to the optimiser
  const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12  // keeps acc[] in registers at -O2 too
    for (auto& v : acc) v = _mm512_fmadd_ps(v, mul, add);
  float s = 0;
  for (auto& v : acc) s += _mm_cvtss_f32(_mm512_castps512_ps128(v));
  return s;
}
__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iters) {
  __m256 acc[12];
  for (auto& v : acc) v = _mm256_set1_ps(float(iters & 1) * 1e-9f);
  const __m256 mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12  // keeps acc[] in registers at -O2 too
    for (auto& v : acc) v = _mm256_fmadd_ps(v, mul, add);
  float s = 0;
  for (auto& v : acc) s += _mm256_cvtss_f32(v);
  return s;
}

double measure_peak() {
  const bool z = gd::isa_supported(gd::Isa::avx512), y = gd::isa_supported(gd::Isa::avx2);
  if (!z && !y) return 0;
  const int64_t iters = 10'000'000;
  const double flops = double(iters) * 12 * 2 * (z ? 16 : 8);
  double best = 0;
  for (int r = 0; r < 5; ++r) {  // best of 5: the machine is shared
    const auto t0 = Clock::now();
    volatile float sink = z ? fma_loop_avx512(iters) : fma_loop_avx2(iters);
    (void)sink;
    best = std::max(best, flops / std::chrono::duration<double>(Clock::now() - t0).count() * 1e-9);
  }
  return best;
}

std::vector<int64_t> parse_list(const char* s) {
  std::vector<int64_t> out;
  for (const char* p = s; *p;) {
    char* end;
    out.push_back(std::strtoll(p, &end, 10));
    p = *end ? end + 1 : end;
  }
  return out;
}

std::vector<Shape> parse_shapes(const char* s) {
  std::vector<Shape> out;
  for (const char* p = s; *p;) {
    char* end;
    int64_t v[3];
    int got = 0;
    do {
      v[got++] = std::strtoll(p, &end, 10);
      p = end + (*end == 'x');
    } while (*end == 'x' && got < 3);
    out.push_back(got == 3 ? Shape{v[0], v[1], v[2]} : Shape{v[0], v[0], v[0]});
    p = *end ? end + 1 : end;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Shape> shapes = {{256, 256, 256},     {512, 512, 512},     {1024, 1024, 1024},
                               {2048, 2048, 2048},  {128, 768, 768},     {128, 3072, 768},
                               {128, 768, 3072},    {512, 768, 768},     {512, 3072, 768},
                               {512, 768, 3072},    {16, 256, 784}};
  std::vector<int64_t> thread_counts = {1, 2};
  int rounds = 5;
  double round_ms = 150;
  bool packed = false, peak_only = false;
  Trans trans;
  gd::Isa isa = gd::best_isa();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : "";
    if (arg == "--quick") {
      shapes = {{128, 128, 128}, {256, 256, 256}, {64, 768, 768}};
      thread_counts = {1};
      rounds = 3;
      round_ms = 30;
      g_settle_ms = 20;
    } else if (arg == "--threads") {
      thread_counts = parse_list(next), ++i;
    } else if (arg == "--shapes") {
      shapes = parse_shapes(next), ++i;
    } else if (arg == "--rounds") {
      rounds = std::max(1, std::atoi(next)), ++i;
    } else if (arg == "--ms") {
      round_ms = std::atof(next), ++i;
    } else if (arg == "--settle") {
      g_settle_ms = std::atof(next), ++i;
    } else if (arg == "--packed") {
      packed = true;
    } else if (arg == "--trans" && (!std::strcmp(next, "a") || !std::strcmp(next, "b") || !std::strcmp(next, "ab"))) {
      trans = {std::strchr(next, 'a') != nullptr, std::strchr(next, 'b') != nullptr}, ++i;
    } else if (arg == "--peak") {
      peak_only = true;
    } else if (arg == "--isa") {
      bool found = false;
      for (gd::Isa c : {gd::Isa::generic, gd::Isa::avx2, gd::Isa::avx512})
        if (std::strcmp(next, gd::isa_name(c)) == 0 && gd::isa_supported(c)) isa = c, found = true;
      if (!found) return std::fprintf(stderr, "unsupported --isa %s\n", next), 2;
      ++i;
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--threads 1,2] [--shapes 1024,128x768x3072] "
                           "[--isa NAME] [--packed] [--rounds N] [--ms T] [--settle MS] [--peak] [--trans a|b|ab]\n", argv[0]);
      return 2;
    }
  }

  const double peak = measure_peak();
  if (peak_only) return std::printf("measured 1-core fp32 FMA peak: %.1f GFLOP/s\n", peak), 0;
  std::printf("onyx sgemm isa: %s   measured 1-core fp32 FMA peak: %.1f GFLOP/s\n", gd::isa_name(isa), peak);
  std::printf("GFLOP/s: medians over %d alternating rounds; best: ratio of the best rounds%s%s\n", rounds,
              trans.a ? "; A stored K x M" : "", trans.b ? "; B stored N x K" : "");
  std::printf("%-18s %3s %9s %9s %7s %6s %7s%s  %s\n", "MxNxK", "thr", "ours", "onednn", "ratio", "best",
              "%peak", packed ? "    packed" : "", "onednn impl");

  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t threads : thread_counts) {
    ThreadPool pool{size_t(threads)};
    onyx::cpu::ParallelFor pf;
    pf.threads = pool.threads();
    pf.run = [&pool](size_t n, const std::function<void(size_t, size_t)>& body) { pool.run(n, body); };
    // oneDNN is built on OpenMP; its primitives size their work for the
    // thread count current when they are created, so set it first.
    omp_set_num_threads(int(threads));

    for (const Shape& s : shapes) {
      std::vector<float> a(size_t(s.m * s.k)), b(size_t(s.k * s.n)), c(size_t(s.m * s.n)), c2(c.size());
      for (auto& v : a) v = dist(rng);
      for (auto& v : b) v = dist(rng);
      DnnlMatmul ref(s, trans, a.data(), b.data(), c2.data());
      const int64_t lda = trans.a ? s.m : s.k, ldb = trans.b ? s.k : s.n;
      std::shared_ptr<onyx::cpu::PackedB> pb;
      if (packed) pb = gd::pack_b_with_isa(isa, trans.b, s.k, s.n, b.data(), ldb);

      auto ours = [&] {
        gd::sgemm_with_isa(isa, trans.a, trans.b, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                           c.data(), s.n, pf);
      };
      auto ours_packed = [&] {
        onyx::cpu::sgemm_packed(trans.a, s.m, s.n, s.k, 1.0f, a.data(), lda, *pb, 0.0f, c.data(), s.n, pf);
      };
      auto theirs = [&] { ref.execute(); };
      const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
      std::vector<double> g_ours, g_dnnl, g_packed;
      ours(), theirs();
      if (packed) ours_packed();
      for (int r = 0; r < rounds; ++r) {
        g_ours.push_back(time_round(ours, flops, round_ms));
        g_dnnl.push_back(time_round(theirs, flops, round_ms));
        if (packed) g_packed.push_back(time_round(ours_packed, flops, round_ms));
      }
      const double mo = median(g_ours), md = median(g_dnnl);
      const double best = *std::max_element(g_ours.begin(), g_ours.end()) /
                          *std::max_element(g_dnnl.begin(), g_dnnl.end());
      char name[64], extra[32] = "";
      std::snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)s.m, (long long)s.n, (long long)s.k);
      if (packed) std::snprintf(extra, sizeof extra, " %9.1f", median(g_packed));
      std::printf("%-18s %3lld %9.1f %9.1f %7.2f %6.2f %6.0f%%%s  %s\n", name, (long long)threads, mo, md, mo / md,
                  best, peak > 0 ? 100.0 * mo / (peak * double(threads)) : 0.0, extra, ref.impl().c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
