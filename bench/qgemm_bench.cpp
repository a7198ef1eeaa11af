// qgemm_bench.cpp: onyx::cpu::qgemm (uint8 x int8 -> int32) against the same
// shape in float32 (onyx::cpu::sgemm_packed) and against oneDNN's u8s8 int8
// matmul, single-threaded, in alternating rounds of one process.
//
//   onyx_qgemm_bench [--shapes MxNxK,...] [--rounds N]
//
// Default shapes are the GEMMs of int8 CNN layers at batch 1 (rows = output
// pixels, columns = filters, K = input channels x window) and a transformer
// projection. Prints GOP/s (two ops per multiply-add) and the ratios: int8 over
// float32 (what quantization buys) and Onyx over oneDNN (> 1: Onyx faster).
// B holds int8 weights shaped like real ones (normal, clipped at 5 sigma =
// 127), packed once (pack_qb); "filters" times the product as a convolution
// computes it, the transpose (filters x pixels) with the filters packed once
// (pack_qa). Packed-once operands are where AVX2's byte kernels run (qgemm.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "gemm/gemm.h"
#include "gemm/qgemm.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  int64_t m, n, k;
};

// Median seconds of one call, over rounds of enough calls to last ~20 ms.
template <typename Fn>
double seconds_per_call(Fn&& fn) {
  fn();
  int calls = 1;
  for (;;) {
    auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) fn();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0.02) return s / calls;
    calls *= 2;
  }
}

class DnnlInt8Matmul {
 public:
  DnnlInt8Matmul(const Shape& s, uint8_t* a, int8_t* b, int32_t* c) : eng_(dnnl::engine::kind::cpu, 0), strm_(eng_) {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    dnnl::memory::desc a_md({s.m, s.k}, dt::u8, tag::ab), b_md({s.k, s.n}, dt::s8, tag::ab),
        c_md({s.m, s.n}, dt::s32, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
    dnnl::matmul::primitive_desc pd(eng_, a_md, b_md, c_md);
#else
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), eng_);
#endif
    prim_ = dnnl::matmul(pd);
    args_ = {{DNNL_ARG_SRC, dnnl::memory(a_md, eng_, a)},
             {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, eng_, b)},
             {DNNL_ARG_DST, dnnl::memory(c_md, eng_, c)}};
  }
  void run() {
    prim_.execute(strm_, args_);
    strm_.wait();
  }

 private:
  dnnl::engine eng_;
  dnnl::stream strm_;
  dnnl::matmul prim_;
  std::unordered_map<int, dnnl::memory> args_;
};

std::vector<Shape> parse_shapes(const std::string& text) {
  std::vector<Shape> shapes;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    std::string item = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    Shape s{};
    if (std::sscanf(item.c_str(), "%ldx%ldx%ld", &s.m, &s.n, &s.k) != 3) {
      std::fprintf(stderr, "qgemm_bench: bad shape '%s' (want MxNxK)\n", item.c_str());
      std::exit(2);
    }
    shapes.push_back(s);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return shapes;
}

}  // namespace

int main(int argc, char** argv) {
  // ResNet-18 3x3 layers at 56/28/14/7 pixels square, MobileNetV2 1x1
  // expand, a 768x768 projection of 128 tokens.
  std::string shapes_text = "3136x64x576,784x128x1152,196x256x2304,49x512x4608,3136x96x16,128x768x768";
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--shapes") && i + 1 < argc) shapes_text = argv[++i];
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: onyx_qgemm_bench [--shapes MxNxK,...] [--rounds N]\n");
      return 2;
    }
  }
  std::printf("qgemm isa %s, 1 thread, median of %d alternating rounds\n", onyx::cpu::qgemm_isa(), rounds);
  std::printf("%-16s %10s %10s %10s %10s %12s %10s %12s\n", "MxNxK", "int8 GOP/s", "f32 GOP/s", "dnnl int8", "int8/f32",
              "onyx/dnnl", "filters", "filters/dnnl");
  std::mt19937 rng(1);
  for (const Shape& s : parse_shapes(shapes_text)) {
    std::vector<uint8_t> a(size_t(s.m * s.k));
    std::vector<int8_t> b(size_t(s.k * s.n));
    std::vector<float> af(a.size()), bf(b.size()), cf(size_t(s.m * s.n));
    std::vector<int32_t> c(size_t(s.m * s.n)), cd(c.size());
    std::normal_distribution<double> normal(0.0, 127.0 / 5.0);
    for (size_t i = 0; i < a.size(); ++i) af[i] = float(a[i] = uint8_t(rng()));
    for (size_t i = 0; i < b.size(); ++i) bf[i] = float(b[i] = int8_t(std::clamp(std::nearbyint(normal(rng)), -127.0, 127.0)));
    const int32_t za = 0, zb = 0;
    auto qb = onyx::cpu::pack_qb({b.data(), true, s.n, false}, s.k, s.n, &zb, 1);
    auto fb = onyx::cpu::pack_b(false, s.k, s.n, bf.data(), s.n);
    DnnlInt8Matmul dnnl_mm(s, a.data(), b.data(), cd.data());
    // The convolution's form: C^T (n x m) = B^T (n x k, filters) . A^T.
    std::vector<int32_t> ct(size_t(s.n * s.m));
    auto pw = onyx::cpu::pack_qa({b.data(), true, s.n, true}, s.n, s.k, &zb, 1);
    onyx::cpu::PackedQB px;
    onyx::cpu::pack_qb_into({a.data(), false, s.k, true}, s.k, s.m, &za, 1, &px, {}, pw.get());
    std::vector<double> tq, tf, td, tw;
    for (int r = 0; r < rounds; ++r) {
      tq.push_back(seconds_per_call([&] {
        onyx::cpu::qgemm(s.m, s.n, s.k, {a.data(), false, s.k, false}, &za, 1, *qb, c.data(), s.n);
      }));
      tf.push_back(seconds_per_call([&] {
        onyx::cpu::sgemm_packed(false, s.m, s.n, s.k, 1.0f, af.data(), s.k, *fb, 0.0f, cf.data(), s.n);
      }));
      td.push_back(seconds_per_call([&] { dnnl_mm.run(); }));
      tw.push_back(seconds_per_call([&] { onyx::cpu::qgemm(s.m, *pw, px, ct.data(), s.m); }));
    }
    // Both against an exact int64 reference on a sample of elements: oneDNN's
    // AVX2 u8s8 kernels add product pairs in int16 (vpmaddubsw), which
    // saturates on large values; qgemm must be exact.
    int64_t onyx_wrong = 0, dnnl_wrong = 0, sampled = 0;
    for (int64_t i = 0; i < s.m; i += 7)
      for (int64_t j = 0; j < s.n; j += 5, ++sampled) {
        int64_t want = 0;
        for (int64_t p = 0; p < s.k; ++p) want += int64_t(a[size_t(i * s.k + p)]) * b[size_t(p * s.n + j)];
        onyx_wrong += c[size_t(i * s.n + j)] != want;
        dnnl_wrong += cd[size_t(i * s.n + j)] != want;
        onyx_wrong += ct[size_t(j * s.m + i)] != want;
      }
    if (onyx_wrong) {
      std::fprintf(stderr, "qgemm_bench: %ldx%ldx%ld: %ld of %ld sampled elements wrong\n", s.m, s.n, s.k,
                   onyx_wrong, sampled);
      return 1;
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double ops = 2.0 * double(s.m) * double(s.n) * double(s.k) * 1e-9;
    const double q = ops / median(tq), f = ops / median(tf), d = ops / median(td), fw = ops / median(tw);
    char name[64];
    std::snprintf(name, sizeof name, "%ldx%ldx%ld", s.m, s.n, s.k);
    std::printf("%-16s %10.1f %10.1f %10.1f %9.2fx %11.2fx %10.1f %11.2fx   (oneDNN inexact on %ld of %ld sampled)\n",
                name, q, f, d, q / f, q / d, fw, fw / d, dnnl_wrong, sampled);
  }
  return 0;
}
