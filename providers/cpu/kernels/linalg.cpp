// linalg.cpp: MatMul, Gemm, MatMulInteger and QLinearMatMul.
//
// float32 runs on the provider's SGEMM (gemm/gemm.h); a B that is a constant
// initializer is packed once at kernel creation. float64 and the integer
// types use a cache-friendly loop (row of C += a[i][k] * row k of B), integer
// products wrapping like the two's-complement hardware does.
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>

#include "kernels/nn.h"

namespace onyx::cpu {
namespace {

// ---------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------

// A numpy matmul: [..., M, K] x [..., K, N] with broadcast batch dims; a 1-D
// A is [1, K] and a 1-D B is [K, 1], the added dim dropped from Y.
struct MatMulShape {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> y_dims;
  // For each Y matrix (in order), the index of the A and B matrix it uses.
  std::vector<int64_t> a_index, b_index;
  // One B matrix and A's matrices in Y's order: A folds into [batch * M, K].
  bool fold_a = false;
  int64_t batch() const { return int64_t(a_index.size()); }
};

std::string matmul_shape(std::span<const int64_t> a, std::span<const int64_t> b, MatMulShape* s) {
  if (a.empty() || b.empty()) return "MatMul inputs must have rank >= 1";
  std::vector<int64_t> ad(a.begin(), a.end()), bd(b.begin(), b.end());
  if (a.size() == 1) ad.insert(ad.begin(), 1);
  if (b.size() == 1) bd.push_back(1);
  s->m = ad[ad.size() - 2];
  s->k = ad.back();
  s->n = bd.back();
  if (bd[bd.size() - 2] != s->k)
    return "inner dims differ: A " + nn::dims_str(a) + " x B " + nn::dims_str(b);
  // Broadcast the batch dims, aligned at the right.
  size_t ar = ad.size() - 2, br = bd.size() - 2, rank = std::max(ar, br);
  std::vector<int64_t> batch(rank), a_stride(rank, 0), b_stride(rank, 0);
  int64_t as = 1, bs = 1;
  for (size_t i = rank; i-- > 0;) {
    int64_t da = i + ar >= rank ? ad[i + ar - rank] : 1,
            db = i + br >= rank ? bd[i + br - rank] : 1;
    if (da != db && da != 1 && db != 1)
      return "batch dims do not broadcast: A " + nn::dims_str(a) + " x B " + nn::dims_str(b);
    batch[i] = std::max(da, db);
    if (da == 0 || db == 0) batch[i] = 0;
    a_stride[i] = da == 1 ? 0 : as;
    b_stride[i] = db == 1 ? 0 : bs;
    as *= da;
    bs *= db;
  }
  int64_t count = sdk::element_count(batch);
  s->a_index.assign(size_t(count), 0);
  s->b_index.assign(size_t(count), 0);
  for (int64_t t = 0; t < count; ++t) {
    int64_t rem = t;
    for (size_t i = rank; i-- > 0;) {
      int64_t pos = rem % batch[i];
      rem /= batch[i];
      s->a_index[size_t(t)] += pos * a_stride[i];
      s->b_index[size_t(t)] += pos * b_stride[i];
    }
  }
  s->fold_a = bs == 1 && as == count;
  s->y_dims = batch;
  if (a.size() > 1) s->y_dims.push_back(s->m);
  if (b.size() > 1) s->y_dims.push_back(s->n);
  return {};
}

// ---------------------------------------------------------------------------
// Loops for non-float32 types
// ---------------------------------------------------------------------------

// Signed overflow is undefined in C++: integers multiply as unsigned.
template <typename T, bool = std::is_integral_v<T>>
struct ArithOf {
  using type = T;
};
template <typename T>
struct ArithOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using Arith = typename ArithOf<T>::type;

// c[M x N] = alpha * op(a) * op(b) + c (c already holds the beta term).
// Rows of C are split over the pool.
template <typename T>
void gemm_loop(sdk::ComputeContext& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha,
               const T* a, const T* b, T* c) {
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  auto rows = [&](size_t lo, size_t hi) {
    std::vector<Arith<T>> acc(static_cast<size_t>(n));
    for (size_t i = lo; i < hi; ++i) {
      std::fill(acc.begin(), acc.end(), Arith<T>(0));
      for (int64_t p = 0; p < k; ++p) {
        Arith<T> aip = Arith<T>(ta ? a[p * lda + int64_t(i)] : a[int64_t(i) * lda + p]);
        if (tb)
          for (int64_t j = 0; j < n; ++j) acc[size_t(j)] += aip * Arith<T>(b[j * ldb + p]);
        else
          for (int64_t j = 0; j < n; ++j) acc[size_t(j)] += aip * Arith<T>(b[p * ldb + j]);
      }
      T* ci = c + int64_t(i) * n;
      for (int64_t j = 0; j < n; ++j) ci[j] = T(Arith<T>(ci[j]) + Arith<T>(alpha) * acc[size_t(j)]);
    }
  };
  // (A fresh lambda: the SDK's parallel_for takes its body as an rvalue.)
  ctx.parallel_for(size_t(m), nn::grain_for(double(n * k)),
                   [&rows](size_t lo, size_t hi) { rows(lo, hi); });
}

std::string check_types(const sdk::NodeInfo& node, std::initializer_list<size_t> inputs) {
  return nn::require_types(node, inputs,
                           {ONYX_DTYPE_FLOAT32, ONYX_DTYPE_FLOAT64, ONYX_DTYPE_INT32,
                            ONYX_DTYPE_INT64, ONYX_DTYPE_UINT32, ONYX_DTYPE_UINT64});
}

// ---------------------------------------------------------------------------
// MatMul
// ---------------------------------------------------------------------------

class MatMulKernel final : public sdk::Kernel {
 public:
  explicit MatMulKernel(const sdk::NodeInfo& node) : label_(nn::node_label(node)) {
    // A constant float32 B with one matrix is packed once for all runs.
    const sdk::ValueDesc& b = node.inputs[1];
    if (b.constant && b.dtype == ONYX_DTYPE_FLOAT32 && b.constant->dims.size() <= 2 &&
        !b.constant->dims.empty() && b.constant->size() > 0) {
      const auto& d = b.constant->dims;
      int64_t k = d[0], n = d.size() == 2 ? d[1] : 1;
      packed_b_ = pack_b(false, k, n, b.constant->data<float>(), n);
    }
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1), y;
    if (a.dtype != b.dtype)
      return nn::fail(label_, "inputs 0 and 1 differ in type (%s, %s)", sdk::dtype_name(a.dtype),
                      sdk::dtype_name(b.dtype));
    MatMulShape s;
    if (std::string e = matmul_shape(a.dims, b.dims, &s); !e.empty())
      return nn::fail(label_, "%s", e.c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, a.dtype, s.y_dims, &y));
    if (y.size() == 0) return nullptr;
    switch (a.dtype) {
      case ONYX_DTYPE_FLOAT32:
        run_float(ctx, a, b, y, s);
        break;
      case ONYX_DTYPE_FLOAT64:
        run_loop<double>(ctx, a, b, y, s);
        break;
      case ONYX_DTYPE_INT32:
        run_loop<int32_t>(ctx, a, b, y, s);
        break;
      case ONYX_DTYPE_INT64:
        run_loop<int64_t>(ctx, a, b, y, s);
        break;
      case ONYX_DTYPE_UINT32:
        run_loop<uint32_t>(ctx, a, b, y, s);
        break;
      case ONYX_DTYPE_UINT64:
        run_loop<uint64_t>(ctx, a, b, y, s);
        break;
      case ONYX_DTYPE_FLOAT16:
      case ONYX_DTYPE_BFLOAT16:
        run_half(ctx, a, b, y, s);
        break;
      default:
        return nn::fail(label_, "unsupported type %s", sdk::dtype_name(a.dtype));
    }
    return nullptr;
  }

 private:
  // float16/bfloat16: widened to float32, multiplied, rounded back.
  void run_half(sdk::ComputeContext& ctx, const sdk::Tensor& a, const sdk::Tensor& b,
                const sdk::Tensor& y, const MatMulShape& s) const {
    std::vector<float> af(size_t(a.size())), bf(size_t(b.size())), yf(size_t(y.size()));
    util::halves_to_floats(a.dtype, a.data<uint16_t>(), af.data(), af.size());
    util::halves_to_floats(b.dtype, b.data<uint16_t>(), bf.data(), bf.size());
    sdk::Tensor a32 = a, b32 = b, y32 = y;
    a32.raw = af.data(), b32.raw = bf.data(), y32.raw = yf.data();
    a32.dtype = b32.dtype = y32.dtype = ONYX_DTYPE_FLOAT32;
    run_float(ctx, a32, b32, y32, s);
    util::floats_to_halves(y.dtype, yf.data(), y.data<uint16_t>(), yf.size());
  }

  void run_float(sdk::ComputeContext& ctx, const sdk::Tensor& a, const sdk::Tensor& b,
                 const sdk::Tensor& y, const MatMulShape& s) const {
    const float *ad = a.data<float>(), *bd = b.data<float>();
    float* yd = y.data<float>();
    if (s.k == 0) {
      std::fill(yd, yd + y.size(), 0.0f);
      return;
    }
    if (s.fold_a) {  // one GEMM: [batch * M, K] x [K, N]
      ParallelFor pf = nn::host_parallel_for(ctx);
      if (uses_packed(s.k, s.n))
        sgemm_packed(false, s.batch() * s.m, s.n, s.k, 1.0f, ad, s.k, *packed_b_, 0.0f, yd, s.n,
                     pf);
      else
        sgemm(false, false, s.batch() * s.m, s.n, s.k, 1.0f, ad, s.k, bd, s.n, 0.0f, yd, s.n, pf);
      return;
    }
    auto one = [&](int64_t t, const ParallelFor& pf) {
      sgemm(false, false, s.m, s.n, s.k, 1.0f, ad + s.a_index[size_t(t)] * s.m * s.k, s.k,
            bd + s.b_index[size_t(t)] * s.k * s.n, s.n, 0.0f, yd + t * s.m * s.n, s.n, pf);
    };
    // Many small matrices: one whole GEMM per task. Few: parallel inside each.
    if (s.batch() >= int64_t(ctx.thread_count())) {
      ParallelFor serial = nn::serial_parallel_for();
      ctx.parallel_for(size_t(s.batch()), nn::grain_for(double(s.m * s.n * s.k), 1 << 18),
                       [&](size_t lo, size_t hi) {
                         for (size_t t = lo; t < hi; ++t) one(int64_t(t), serial);
                       });
    } else {
      ParallelFor pf = nn::host_parallel_for(ctx);
      for (int64_t t = 0; t < s.batch(); ++t) one(t, pf);
    }
  }

  template <typename T>
  static void run_loop(sdk::ComputeContext& ctx, const sdk::Tensor& a, const sdk::Tensor& b,
                       const sdk::Tensor& y, const MatMulShape& s) {
    std::fill(y.data<T>(), y.data<T>() + y.size(), T(0));
    for (int64_t t = 0; t < s.batch(); ++t)
      gemm_loop<T>(ctx, false, false, s.m, s.n, s.k, T(1),
                   a.data<T>() + s.a_index[size_t(t)] * s.m * s.k,
                   b.data<T>() + s.b_index[size_t(t)] * s.k * s.n, y.data<T>() + t * s.m * s.n);
  }

  bool uses_packed(int64_t k, int64_t n) const {
    return packed_b_ && packed_b_k(*packed_b_) == k && packed_b_n(*packed_b_) == n;
  }

  std::string label_;
  std::shared_ptr<PackedB> packed_b_;
};

// ---------------------------------------------------------------------------
// Gemm: Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N].
// ---------------------------------------------------------------------------

class GemmKernel final : public sdk::Kernel {
 public:
  explicit GemmKernel(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)),
        trans_a_(node.get_int("transA", 0) != 0),
        trans_b_(node.get_int("transB", 0) != 0),
        alpha_(node.get_float("alpha", 1.0)),
        beta_(node.get_float("beta", 1.0)),
        // Before opset 7, C broadcasts only when the broadcast attribute says so.
        c_must_match_(node.opset < 7 && node.get_int("broadcast", 0) == 0) {
    const sdk::ValueDesc& b = node.inputs[1];
    if (b.constant && b.dtype == ONYX_DTYPE_FLOAT32 && b.constant->dims.size() == 2 &&
        b.constant->size() > 0) {
      const auto& d = b.constant->dims;
      int64_t k = trans_b_ ? d[1] : d[0], n = trans_b_ ? d[0] : d[1];
      packed_b_ = pack_b(trans_b_, k, n, b.constant->data<float>(), d[1]);
    }
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1), y;
    std::optional<sdk::Tensor> c = ctx.input(2);
    if (a.rank() != 2 || b.rank() != 2)
      return nn::fail(label_, "inputs A %s and B %s must be matrices", nn::dims_str(a.dims).c_str(),
                      nn::dims_str(b.dims).c_str());
    if (a.dtype != b.dtype || (c && c->dtype != a.dtype))
      return nn::fail(label_, "inputs differ in type");
    int64_t m = trans_a_ ? a.dim(1) : a.dim(0), k = trans_a_ ? a.dim(0) : a.dim(1);
    int64_t kb = trans_b_ ? b.dim(1) : b.dim(0), n = trans_b_ ? b.dim(0) : b.dim(1);
    if (k != kb)
      return nn::fail(label_, "inner dims differ: A %s (transA=%d) x B %s (transB=%d)",
                      nn::dims_str(a.dims).c_str(), int(trans_a_), nn::dims_str(b.dims).c_str(),
                      int(trans_b_));
    if (c) ONYX_SDK_RETURN_IF_ERROR(check_c(*c, m, n));
    const int64_t y_dims[] = {m, n};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, a.dtype, y_dims, &y));
    if (y.size() == 0) return nullptr;
    bool add_c = c && beta_ != 0;  // beta = 0 ignores C, as other runtimes do
    switch (a.dtype) {
      case ONYX_DTYPE_FLOAT32: {
        if (add_c) fill_c<float>(*c, y, m, n);
        if (k == 0) {  // an empty product: Y is beta * C (or 0)
          if (!add_c) std::fill(y.data<float>(), y.data<float>() + y.size(), 0.0f);
          break;
        }
        ParallelFor pf = nn::host_parallel_for(ctx);
        float beta = add_c ? 1.0f : 0.0f;
        if (uses_packed(k, n))
          sgemm_packed(trans_a_, m, n, k, float(alpha_), a.data<float>(), a.dim(1), *packed_b_,
                       beta, y.data<float>(), n, pf);
        else
          sgemm(trans_a_, trans_b_, m, n, k, float(alpha_), a.data<float>(), a.dim(1),
                b.data<float>(), b.dim(1), beta, y.data<float>(), n, pf);
        break;
      }
      case ONYX_DTYPE_FLOAT64:
        run_loop<double>(ctx, a, b, c, y, m, n, k, add_c);
        break;
      case ONYX_DTYPE_INT32:
        run_loop<int32_t>(ctx, a, b, c, y, m, n, k, add_c);
        break;
      case ONYX_DTYPE_INT64:
        run_loop<int64_t>(ctx, a, b, c, y, m, n, k, add_c);
        break;
      case ONYX_DTYPE_UINT32:
        run_loop<uint32_t>(ctx, a, b, c, y, m, n, k, add_c);
        break;
      case ONYX_DTYPE_UINT64:
        run_loop<uint64_t>(ctx, a, b, c, y, m, n, k, add_c);
        break;
      default:
        return nn::fail(label_, "unsupported type %s", sdk::dtype_name(a.dtype));
    }
    return nullptr;
  }

 private:
  OnyxStatus* check_c(const sdk::Tensor& c, int64_t m, int64_t n) const {
    const int64_t want[] = {m, n};
    bool ok = c.rank() <= 2;
    for (size_t i = 0; ok && i < c.rank(); ++i) {
      int64_t d = c.dim(i), w = want[2 - c.rank() + i];
      ok = d == w || (d == 1 && !c_must_match_);
    }
    if (ok && c_must_match_) ok = c.rank() == 2;
    if (!ok)
      return nn::fail(
          label_, "input 2 (C) has shape %s; it must %s [%lld,%lld]", nn::dims_str(c.dims).c_str(),
          c_must_match_ ? "equal (broadcast=0)" : "broadcast to", (long long)m, (long long)n);
    return nullptr;
  }

  // y = beta * C broadcast to [M, N].
  template <typename T>
  void fill_c(const sdk::Tensor& c, const sdk::Tensor& y, int64_t m, int64_t n) const {
    int64_t rows = c.rank() == 2 ? c.dim(0) : 1, cols = c.rank() >= 1 ? c.dim(c.rank() - 1) : 1;
    const T* cd = c.data<T>();
    T* yd = y.data<T>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        yd[i * n + j] = T(beta_ * double(cd[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)]));
  }

  template <typename T>
  void run_loop(sdk::ComputeContext& ctx, const sdk::Tensor& a, const sdk::Tensor& b,
                const std::optional<sdk::Tensor>& c, const sdk::Tensor& y, int64_t m, int64_t n,
                int64_t k, bool add_c) const {
    if (add_c)
      fill_c<T>(*c, y, m, n);
    else
      std::fill(y.data<T>(), y.data<T>() + y.size(), T(0));
    gemm_loop<T>(ctx, trans_a_, trans_b_, m, n, k, T(alpha_), a.data<T>(), b.data<T>(),
                 y.data<T>());
  }

  std::string label_;
  bool trans_a_, trans_b_;
  double alpha_, beta_;
  bool c_must_match_;
  std::shared_ptr<PackedB> packed_b_;

  bool uses_packed(int64_t k, int64_t n) const {
    return packed_b_ && packed_b_k(*packed_b_) == k && packed_b_n(*packed_b_) == n;
  }
};

// ---------------------------------------------------------------------------
// MatMulInteger and QLinearMatMul: (a - a_zero) x (b - b_zero) in int32.
// Zero points and scales are per tensor (one element), per row of A ([M])
// or per column of B ([N]).
// ---------------------------------------------------------------------------

// A per-tensor / per-row / per-column parameter: `count` entries, or one.
struct Vec {
  std::vector<double> values;
  double at(int64_t i) const { return values.size() == 1 ? values[0] : values[size_t(i)]; }
};

double int_element(const sdk::Tensor& t, int64_t i) {
  switch (t.dtype) {
    case ONYX_DTYPE_UINT8:
      return t.data<uint8_t>()[i];
    case ONYX_DTYPE_INT8:
      return t.data<int8_t>()[i];
    case ONYX_DTYPE_INT32:
      return t.data<int32_t>()[i];
    case ONYX_DTYPE_FLOAT16:
    case ONYX_DTYPE_BFLOAT16:
      return util::half_value(t.dtype, t.data<uint16_t>()[i]);
    default:
      return t.data<float>()[i];  // scales: float32 or 16-bit floats (checked in supports)
  }
}

// Reads optional input `k` (absent: `fallback`); `count` is M or N.
OnyxStatus* read_vec(const std::string& label, sdk::ComputeContext& ctx, size_t k, int64_t count,
                     const char* what, double fallback, Vec* out) {
  std::optional<sdk::Tensor> t = ctx.input(k);
  if (!t) {
    out->values = {fallback};
    return nullptr;
  }
  if (t->size() != 1 && t->size() != count)
    return nn::fail(label, "input %zu (%s) has shape %s; expected 1 or %lld elements", k, what,
                    nn::dims_str(t->dims).c_str(), (long long)count);
  out->values.resize(size_t(t->size()));
  for (int64_t i = 0; i < t->size(); ++i) out->values[size_t(i)] = int_element(*t, i);
  return nullptr;
}

template <typename TA, typename TB>
void int_gemm(const TA* a, const TB* b, int32_t* acc, const MatMulShape& s, const Vec& za,
              const Vec& zb, int64_t t) {
  a += s.a_index[size_t(t)] * s.m * s.k;
  b += s.b_index[size_t(t)] * s.k * s.n;
  std::vector<int32_t> bz(static_cast<size_t>(s.n));
  for (int64_t j = 0; j < s.n; ++j) bz[size_t(j)] = int32_t(zb.at(j));
  // Each product fits in int32 (|(a - za)(b - zb)| <= 255^2); the sum wraps
  // modulo 2^32 like an int32 accumulator, without signed overflow.
  std::vector<uint32_t> row(static_cast<size_t>(s.n));
  for (int64_t i = 0; i < s.m; ++i) {
    std::fill(row.begin(), row.end(), 0u);
    int32_t az = int32_t(za.at(i));
    for (int64_t p = 0; p < s.k; ++p) {
      int32_t av = int32_t(a[i * s.k + p]) - az;
      const TB* bp = b + p * s.n;
      for (int64_t j = 0; j < s.n; ++j)
        row[size_t(j)] += uint32_t(av * (int32_t(bp[j]) - bz[size_t(j)]));
    }
    for (int64_t j = 0; j < s.n; ++j) acc[i * s.n + j] = int32_t(row[size_t(j)]);
  }
}

class QuantMatMulKernel final : public sdk::Kernel {
 public:
  QuantMatMulKernel(const sdk::NodeInfo& node, bool qlinear)
      : label_(nn::node_label(node)), qlinear_(qlinear) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    // MatMulInteger: A, B, a_zero, b_zero. QLinearMatMul: a, a_scale,
    // a_zero, b, b_scale, b_zero, y_scale, y_zero.
    const size_t ib = qlinear_ ? 3 : 1, izb = qlinear_ ? 5 : 3, iza = 2;
    sdk::Tensor a = ctx.in(0), b = ctx.in(ib), y;
    MatMulShape s;
    if (std::string e = matmul_shape(a.dims, b.dims, &s); !e.empty())
      return nn::fail(label_, "%s", e.c_str());
    Vec za, zb, sa, sb, sy, zy;
    ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, iza, s.m, "a_zero_point", 0, &za));
    ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, izb, s.n, "b_zero_point", 0, &zb));
    int32_t y_type = ONYX_DTYPE_INT32;
    if (qlinear_) {
      ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, 1, s.m, "a_scale", 1, &sa));
      ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, 4, s.n, "b_scale", 1, &sb));
      ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, 6, s.m, "y_scale", 1, &sy));
      ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, 7, s.m, "y_zero_point", 0, &zy));
      std::optional<sdk::Tensor> yz = ctx.input(7);
      y_type = yz ? yz->dtype : ONYX_DTYPE_UINT8;
    }
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, y_type, s.y_dims, &y));
    if (y.size() == 0) return nullptr;
    ctx.parallel_for(size_t(s.batch()), nn::grain_for(double(s.m * s.n * s.k), 1 << 18),
                     [&](size_t lo, size_t hi) {
                       std::vector<int32_t> acc(qlinear_ ? size_t(s.m * s.n) : 0);
                       for (size_t t = lo; t < hi; ++t) {
                         int32_t* out =
                             qlinear_ ? acc.data() : y.data<int32_t>() + int64_t(t) * s.m * s.n;
                         run_int(a, b, out, s, za, zb, int64_t(t));
                         if (qlinear_) requantize(acc.data(), y, s, sa, sb, sy, zy, int64_t(t));
                       }
                     });
    return nullptr;
  }

 private:
  static void run_int(const sdk::Tensor& a, const sdk::Tensor& b, int32_t* acc,
                      const MatMulShape& s, const Vec& za, const Vec& zb, int64_t t) {
    bool a8 = a.dtype == ONYX_DTYPE_INT8, b8 = b.dtype == ONYX_DTYPE_INT8;
    if (a8 && b8)
      int_gemm(a.data<int8_t>(), b.data<int8_t>(), acc, s, za, zb, t);
    else if (a8)
      int_gemm(a.data<int8_t>(), b.data<uint8_t>(), acc, s, za, zb, t);
    else if (b8)
      int_gemm(a.data<uint8_t>(), b.data<int8_t>(), acc, s, za, zb, t);
    else
      int_gemm(a.data<uint8_t>(), b.data<uint8_t>(), acc, s, za, zb, t);
  }

  // y = saturate(round_half_even(acc * a_scale * b_scale / y_scale) + y_zero).
  static void requantize(const int32_t* acc, const sdk::Tensor& y, const MatMulShape& s,
                         const Vec& sa, const Vec& sb, const Vec& sy, const Vec& zy, int64_t t) {
    bool i8 = y.dtype == ONYX_DTYPE_INT8;
    double lo = i8 ? -128 : 0, hi = i8 ? 127 : 255;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double real = double(acc[i * s.n + j]) * sa.at(i) * sb.at(j) / sy.at(i);
        double q = std::clamp(std::nearbyint(real) + zy.at(i), lo, hi);
        int64_t at = (t * s.m + i) * s.n + j;
        if (i8)
          y.data<int8_t>()[at] = int8_t(q);
        else
          y.data<uint8_t>()[at] = uint8_t(q);
      }
  }

  std::string label_;
  bool qlinear_;
};

std::string check_quant_node(const sdk::NodeInfo& node, bool qlinear) {
  const std::initializer_list<int32_t> u8 = {ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8};
  if (!qlinear) return nn::require_types(node, {0, 1, 2, 3}, u8);
  if (std::string e = nn::require_types(node, {0, 2, 3, 5, 7}, u8); !e.empty()) return e;
  return nn::require_types(node, {1, 4, 6}, {ONYX_DTYPE_FLOAT32, ONYX_DTYPE_FLOAT16, ONYX_DTYPE_BFLOAT16});
}

}  // namespace

void register_linalg_kernels(sdk::KernelRegistry& registry) {
  sdk::KernelDef matmul;
  matmul.op_type = "MatMul";
  matmul.supports = [](const sdk::NodeInfo& node) {
    if (util::is_half(node.input_dtype(0)) && node.input_dtype(1) == node.input_dtype(0)) return std::string();
    return check_types(node, {0, 1});
  };
  matmul.create = [](const sdk::NodeInfo& node) { return std::make_unique<MatMulKernel>(node); };
  registry.add(std::move(matmul));

  sdk::KernelDef gemm;
  gemm.op_type = "Gemm";
  gemm.supports = [](const sdk::NodeInfo& node) { return check_types(node, {0, 1, 2}); };
  gemm.create = [](const sdk::NodeInfo& node) { return std::make_unique<GemmKernel>(node); };
  registry.add(std::move(gemm));

  for (bool qlinear : {false, true}) {
    sdk::KernelDef def;
    def.op_type = qlinear ? "QLinearMatMul" : "MatMulInteger";
    def.supports = [qlinear](const sdk::NodeInfo& node) { return check_quant_node(node, qlinear); };
    def.create = [qlinear](const sdk::NodeInfo& node) {
      return std::make_unique<QuantMatMulKernel>(node, qlinear);
    };
    registry.add(std::move(def));
  }
}

}  // namespace onyx::cpu
