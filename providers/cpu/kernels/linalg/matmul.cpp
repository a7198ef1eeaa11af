// matmul.cpp: MatMul and Gemm, and ai.onyx MatMulBias (a MatMul, its bias
// Add, an activation and a residual Add, which
// optimize/matmul_bias_fusion.cpp writes).
//
// float32 runs on the provider's SGEMM (gemm/gemm.h); a B that is a constant
// initializer is packed once at kernel creation. float64 and the integer
// types use a cache-friendly loop (row of C += a[i][k] * row k of B), integer
// products wrapping like the two's-complement hardware does.
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>

#include "kernels/elementwise/elementwise.h"
#include "kernels/elementwise/vec_math.h"
#include "kernels/linalg/matmul_shape.h"
#include "kernels/nn_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

using linalg::matmul_shape;
using linalg::MatMulShape;

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

// ---------------------------------------------------------------------------
// MatMul
// ---------------------------------------------------------------------------

// ai.onyx MatMulBias(A, B, bias[, residual]) with attribute activation "" |
// "Relu" | "Gelu" | "FastGelu": Y = activation(A x B + bias) + residual, bias
// a constant vector over the last axis, the residual broadcasting to the
// product. Float32 only; the bias, activation and a residual of the
// product's shape are applied to each block of Y as the GEMM finishes it.
std::string matmul_bias_supports(const sdk::NodeInfo& node) {
  const std::string act = node.get_string("activation", "");
  if (act != "" && act != "Relu" && act != "Gelu" && act != "FastGelu")
    return "MatMulBias activation '" + act + "' is not supported";
  const sdk::ValueDesc& bias = node.inputs[2];
  if (!bias.constant) return "MatMulBias: the bias is not a constant";
  if (bias.constant->dims.size() != 1) return "MatMulBias: the bias is not a vector";
  return {};
}

class MatMulKernel final : public sdk::Kernel {
 public:
  explicit MatMulKernel(const sdk::NodeInfo& node) : label_(nn::node_label(node)) {
    if (node.op_type == "MatMulBias") {
      residual_ = node.input_present(3);
      const sdk::ConstantTensor& bias = *node.inputs[2].constant;
      bias_.assign(bias.data<float>(), bias.data<float>() + bias.size());
      const std::string act = node.get_string("activation", "");
      epilogue_.relu = act == "Relu";
      if (act == "Gelu") epilogue_.activation = [](const float* x, float* y, size_t n, float) { vec::gelu_erf(x, y, n); };
      if (act == "FastGelu") epilogue_.activation = [](const float* x, float* y, size_t n, float) { vec::gelu_tanh(x, y, n); };
    }
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
    if (!bias_.empty() && (a.dtype != ONYX_DTYPE_FLOAT32 || s.n != int64_t(bias_.size())))
      return nn::fail(label_, "MatMulBias of %s x %s: the %zu-element float32 bias does not fit",
                      nn::dims_str(a.dims).c_str(), nn::dims_str(b.dims).c_str(), bias_.size());
    if (residual_) return run_with_residual(ctx, a, b, s);
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
  // MatMulBias with a residual: added by the epilogue when it has the
  // product's shape; else (it broadcasts) the product goes to scratch and a
  // broadcasting add writes Y.
  OnyxStatus* run_with_residual(sdk::ComputeContext& ctx, const sdk::Tensor& a, const sdk::Tensor& b,
                                const MatMulShape& s) const {
    const sdk::Tensor r = ctx.in(3);
    if (r.dtype != ONYX_DTYPE_FLOAT32) return nn::fail(label_, "the residual is %s, not float32", sdk::dtype_name(r.dtype));
    std::vector<int64_t> out;
    if (std::string e = ew::broadcast_shape({s.y_dims, r.dims}, &out); !e.empty())
      return nn::fail(label_, "the residual does not broadcast to the product: %s", e.c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out, &y));
    if (y.size() == 0) return nullptr;
    if (std::ranges::equal(r.dims, s.y_dims)) {
      run_float(ctx, a, b, y, s, r.data<float>());
      return nullptr;
    }
    void* scratch = nullptr;
    ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(sdk::element_count(s.y_dims)) * sizeof(float), &scratch));
    sdk::Tensor product = y;
    product.raw = scratch;
    product.dims = s.y_dims;
    run_float(ctx, a, b, product, s);
    ew::binary_loop(ctx, ew::make_plan({s.y_dims, r.dims}, out), static_cast<const float*>(scratch),
                    r.data<float>(), y.data<float>(), [](float p, float q) { return p + q; });
    return nullptr;
  }

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

  // `residual`: MatMulBias's, of Y's shape, or null.
  void run_float(sdk::ComputeContext& ctx, const sdk::Tensor& a, const sdk::Tensor& b,
                 const sdk::Tensor& y, const MatMulShape& s, const float* residual = nullptr) const {
    const float *ad = a.data<float>(), *bd = b.data<float>();
    float* yd = y.data<float>();
    GemmEpilogue epilogue = epilogue_;
    epilogue.bias = bias_.empty() ? nullptr : bias_.data();
    epilogue.residual = residual;
    epilogue.ldr = s.n;
    if (s.k == 0 && epilogue.empty()) {
      std::fill(yd, yd + y.size(), 0.0f);
      return;
    }
    if (s.fold_a) {  // one GEMM: [batch * M, K] x [K, N]
      ParallelFor pf = nn::host_parallel_for(ctx);
      if (uses_packed(s.k, s.n))
        sgemm_packed(false, s.batch() * s.m, s.n, s.k, 1.0f, ad, s.k, *packed_b_, 0.0f, yd, s.n,
                     pf, epilogue);
      else
        sgemm(false, false, s.batch() * s.m, s.n, s.k, 1.0f, ad, s.k, bd, s.n, 0.0f, yd, s.n, pf, epilogue);
      return;
    }
    auto one = [&](int64_t t, const ParallelFor& pf) {
      GemmEpilogue e = epilogue;
      if (residual) e.residual = residual + t * s.m * s.n;
      sgemm(false, false, s.m, s.n, s.k, 1.0f, ad + s.a_index[size_t(t)] * s.m * s.k, s.k,
            bd + s.b_index[size_t(t)] * s.k * s.n, s.n, 0.0f, yd + t * s.m * s.n, s.n, pf, e);
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
  std::vector<float> bias_;  // MatMulBias: one per column of Y; MatMul: empty
  GemmEpilogue epilogue_;    // MatMulBias's activation (its bias is bias_)
  bool residual_ = false;    // MatMulBias with input 3
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
        c_must_match_(node.domain.empty() && node.opset < 7 && node.get_int("broadcast", 0) == 0),
        // com.microsoft FusedGemm (optimize/activation_fusion.cpp): Gemm, then Relu.
        relu_(node.op_type == "FusedGemm") {
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
      case ONYX_DTYPE_FLOAT32:
        run_float(ctx, a, b, c, y, m, n, k, add_c);
        break;
      case ONYX_DTYPE_FLOAT16:
      case ONYX_DTYPE_BFLOAT16: {  // widened to float32, multiplied, rounded back once
        util::Widened a32 = util::widen(a), b32 = util::widen(b), y32 = util::widen(y, false);
        std::optional<util::Widened> c32;
        if (c) c32 = util::widen(*c);
        run_float(ctx, a32.tensor, b32.tensor, c32 ? std::optional(c32->tensor) : std::nullopt, y32.tensor, m, n,
                  k, add_c);
        util::narrow_to(y32, y);
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
    if (rows == 1) {  // a bias row: scaled once, then copied into every output row
      std::vector<T> row(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) row[size_t(j)] = T(beta_ * double(cd[cols == 1 ? 0 : j]));
      for (int64_t i = 0; i < m; ++i) std::copy(row.begin(), row.end(), yd + i * n);
      return;
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        yd[i * n + j] = T(beta_ * double(cd[i * cols + (cols == 1 ? 0 : j)]));
  }

  // A C of one row (a bias, [n] or [1, n]) is added by the GEMM's epilogue
  // to each block of Y as it is finished (with the fused activation, if
  // any); any other C is copied into Y first and accumulated onto.
  void run_float(sdk::ComputeContext& ctx, const sdk::Tensor& a, const sdk::Tensor& b,
                 const std::optional<sdk::Tensor>& c, const sdk::Tensor& y, int64_t m, int64_t n, int64_t k,
                 bool add_c) const {
    GemmEpilogue epilogue;
    epilogue.relu = relu_;
    std::vector<float> bias;
    const bool bias_row = add_c && (c->rank() < 2 || c->dim(0) == 1);
    if (bias_row) {
      const int64_t cols = c->rank() >= 1 ? c->dim(c->rank() - 1) : 1;
      if (cols == n && beta_ == 1.0) {
        epilogue.bias = c->data<float>();
      } else {
        bias.resize(size_t(n));
        for (int64_t j = 0; j < n; ++j) bias[size_t(j)] = float(beta_ * double(c->data<float>()[cols == 1 ? 0 : j]));
        epilogue.bias = bias.data();
      }
    } else if (add_c) {
      fill_c<float>(*c, y, m, n);
    }
    ParallelFor pf = nn::host_parallel_for(ctx);
    float beta = add_c && !bias_row ? 1.0f : 0.0f;
    if (uses_packed(k, n))
      sgemm_packed(trans_a_, m, n, k, float(alpha_), a.data<float>(), a.dim(1), *packed_b_, beta,
                   y.data<float>(), n, pf, epilogue);
    else
      sgemm(trans_a_, trans_b_, m, n, k, float(alpha_), a.data<float>(), a.dim(1), b.data<float>(), b.dim(1),
            beta, y.data<float>(), n, pf, epilogue);
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
  bool relu_;
  std::shared_ptr<PackedB> packed_b_;

  bool uses_packed(int64_t k, int64_t n) const {
    return packed_b_ && packed_b_k(*packed_b_) == k && packed_b_n(*packed_b_) == n;
  }
};

}  // namespace

void register_matmul_kernels(sdk::KernelRegistry& registry) {
  constexpr sdk::DTypeSet kTypes = sdk::dtypes::kFloat | sdk::DTypeSet{ONYX_DTYPE_INT32, ONYX_DTYPE_INT64,
                                                                       ONYX_DTYPE_UINT32, ONYX_DTYPE_UINT64};
  registry.add(sdk::KernelDefBuilder("MatMul")
                   .inputs(2)  // the kernel reads inputs[1] when it is created
                   .check([kTypes](const sdk::NodeInfo& node) {
                     // float16/bfloat16 when both inputs have that type.
                     if (util::is_half(node.input_dtype(0)) && node.input_dtype(1) == node.input_dtype(0))
                       return std::string();
                     return sdk::TypeRule{"", {0, 1}, kTypes}.check(node);
                   })
                   .create<MatMulKernel>());
  registry.add(sdk::KernelDefBuilder("MatMulBias", kOnyxDomain)
                   .inputs(3, 4)
                   .input_types({0, 1, 2, 3}, sdk::dtypes::kFloat32)
                   .check(matmul_bias_supports)
                   .create<MatMulKernel>());
  // Gemm: float16/bfloat16 too (widened, as MatMul's), which mixed-precision
  // training's MatMul gradients and autocast Gemms need.
  registry.add(
      sdk::KernelDefBuilder("Gemm").inputs(2, 3).input_types({0, 1, 2}, kTypes | sdk::dtypes::kHalf).create<GemmKernel>());
  // ONNX Runtime's com.microsoft FusedGemm with activation Relu: the Relu is
  // applied to each block of Y as the GEMM finishes it (float32).
  registry.add(sdk::KernelDefBuilder("FusedGemm", "com.microsoft")
                   .inputs(2, 3)
                   .input_types({0, 1, 2}, sdk::dtypes::kFloat32)
                   .check([](const sdk::NodeInfo& node) {
                     const std::string activation = node.get_string("activation", "");
                     return activation == "Relu" ? std::string()
                                                 : "FusedGemm activation '" + activation + "' is not supported";
                   })
                   .create<GemmKernel>());
}

}  // namespace onyx::cpu
