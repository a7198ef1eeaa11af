// conv_grad_f64_test.cpp: besides the end-to-end Conv checks (rules_test.cpp,
// which difference the provider's own Conv), this checks the
// ai.onyx::ConvGrad kernel the Conv rule emits in float64 against
// central differences of a float64 reference convolution (direct loops):
// for L(X, W) = sum(conv(X, W) * dY), dL/dX and dL/dW are ConvGrad's outputs.
// L is linear in X and W, so central differences are exact up to rounding
// (~1e-14 here); tolerance 1e-9.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "autodiff/emitter.h"
#include "grad_check.h"

namespace onyx::runtime::autodiff::testing {
namespace {

struct Geometry {
  int64_t n = 2, c = 4, m = 6, h = 5, w = 6, k = 3, stride = 2, pad = 1, dilation = 1, group = 2;
  int64_t out(int64_t in) const { return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
};

double reference_loss(const Geometry& g, const std::vector<double>& x, const std::vector<double>& w,
                      const std::vector<double>& dy) {
  const int64_t oh = g.out(g.h), ow = g.out(g.w), cg = g.c / g.group, mg = g.m / g.group;
  double loss = 0;
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t m = 0; m < g.m; ++m)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t p = 0; p < g.k; ++p)
              for (int64_t q = 0; q < g.k; ++q) {
                int64_t y = i * g.stride - g.pad + p * g.dilation, z = j * g.stride - g.pad + q * g.dilation;
                if (y < 0 || y >= g.h || z < 0 || z >= g.w) continue;
                int64_t channel = (m / mg) * cg + c;
                acc += x[size_t(((b * g.c + channel) * g.h + y) * g.w + z)] * w[size_t(((m * cg + c) * g.k + p) * g.k + q)];
              }
          loss += acc * dy[size_t(((b * g.m + m) * oh + i) * ow + j)];
        }
  return loss;
}

TEST(ConvGradKernel, Float64MatchesFiniteDifferencesOfAReferenceConv) {
  for (Geometry g : {Geometry{}, Geometry{1, 3, 2, 7, 5, 3, 1, 2, 2, 1}}) {
    const int64_t oh = g.out(g.h), ow = g.out(g.w);
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> dist(-1, 1);
    auto random = [&](size_t count) {
      std::vector<double> v(count);
      for (double& e : v) e = dist(rng);
      return v;
    };
    std::vector<double> x = random(size_t(g.n * g.c * g.h * g.w)), w = random(size_t(g.m * (g.c / g.group) * g.k * g.k)),
                        dy = random(size_t(g.n * g.m * oh * ow));
    Forward f;
    f.input("dy", {g.n, g.m, oh, ow}).input("x", {g.n, g.c, g.h, g.w}).input("w", {g.m, g.c / g.group, g.k, g.k});
    f.node("ConvGrad", {"dy", "x", "w"}, {"dx", "dw"},
           {attr_ints("strides", {g.stride, g.stride}), attr_ints("pads", {g.pad, g.pad, g.pad, g.pad}),
            attr_ints("dilations", {g.dilation, g.dilation}), attr_int("group", g.group)},
           kOnyxDomain);
    f.output("dx", {g.n, g.c, g.h, g.w}).output("dw", {g.m, g.c / g.group, g.k, g.k});
    auto* o = f.proto().add_opset_import();
    o->set_domain(kOnyxDomain);
    o->set_version(1);
    auto s = open_session(f.proto());
    auto tdy = tensor_from<double>(ONYX_DTYPE_FLOAT64, {g.n, g.m, oh, ow}, dy);
    auto tx = tensor_from<double>(ONYX_DTYPE_FLOAT64, {g.n, g.c, g.h, g.w}, x);
    auto tw = tensor_from<double>(ONYX_DTYPE_FLOAT64, {g.m, g.c / g.group, g.k, g.k}, w);
    auto out = s->run({{"dy", &tdy}, {"x", &tx}, {"w", &tw}});
    const double h = 1e-3;
    double worst = 0;
    for (auto [values, grad] : {std::pair{&x, &out[0]}, std::pair{&w, &out[1]}})
      for (size_t i = 0; i < values->size(); ++i) {
        double saved = (*values)[i];
        (*values)[i] = saved + h;
        double plus = reference_loss(g, x, w, dy);
        (*values)[i] = saved - h;
        double minus = reference_loss(g, x, w, dy);
        (*values)[i] = saved;
        worst = std::max(worst, std::fabs(grad->data_as<double>()[i] - (plus - minus) / (2 * h)));
      }
    EXPECT_LE(worst, 1e-9) << "group " << g.group << " dilation " << g.dilation;
  }
}

// float32, stride 1: the CPU provider takes dX from its direct convolution
// (dY convolved with W flipped) and dW from per-image GEMMs summed over the
// threads' own copies. Both gradients against exact float64 sums over every
// (output, tap) term, within the summation bound |error| <= gamma_T * sum of
// |terms| (T terms, gamma_T = T u / (1 - T u), u = 2^-24), whatever the order.
TEST(ConvGradKernel, Float32StrideOneMatchesAFloat64Sum) {
  for (Geometry g : {Geometry{3, 4, 6, 9, 19, 3, 1, 1, 1, 2}, Geometry{2, 3, 5, 6, 7, 3, 1, 2, 2, 1},
                     Geometry{4, 8, 16, 14, 14, 3, 1, 1, 1, 1}, Geometry{1, 1, 8, 28, 28, 3, 1, 1, 1, 1}}) {
    const int64_t oh = g.out(g.h), ow = g.out(g.w), cg = g.c / g.group, mg = g.m / g.group;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-1, 1);
    auto random = [&](size_t count) {
      std::vector<float> v(count);
      for (float& e : v) e = dist(rng);
      return v;
    };
    const std::vector<float> x = random(size_t(g.n * g.c * g.h * g.w)), w = random(size_t(g.m * cg * g.k * g.k)),
                             dy = random(size_t(g.n * g.m * oh * ow));
    std::vector<double> dx(x.size()), dw(w.size()), dx_abs(x.size()), dw_abs(w.size());
    std::vector<int64_t> dx_terms(x.size()), dw_terms(w.size());
    for (int64_t b = 0; b < g.n; ++b)
      for (int64_t m = 0; m < g.m; ++m)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j)
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t p = 0; p < g.k; ++p)
                for (int64_t q = 0; q < g.k; ++q) {
                  const int64_t y = i - g.pad + p * g.dilation, z = j - g.pad + q * g.dilation;
                  if (y < 0 || y >= g.h || z < 0 || z >= g.w) continue;
                  const size_t xi = size_t(((b * g.c + (m / mg) * cg + c) * g.h + y) * g.w + z);
                  const size_t wi = size_t(((m * cg + c) * g.k + p) * g.k + q);
                  const double d = dy[size_t(((b * g.m + m) * oh + i) * ow + j)];
                  dx[xi] += double(w[wi]) * d, dx_abs[xi] += std::fabs(double(w[wi]) * d), ++dx_terms[xi];
                  dw[wi] += double(x[xi]) * d, dw_abs[wi] += std::fabs(double(x[xi]) * d), ++dw_terms[wi];
                }
    Forward f;
    f.input("dy", {g.n, g.m, oh, ow}, onnx::TensorProto::FLOAT).input("x", {g.n, g.c, g.h, g.w}, onnx::TensorProto::FLOAT)
        .input("w", {g.m, cg, g.k, g.k}, onnx::TensorProto::FLOAT);
    f.node("ConvGrad", {"dy", "x", "w"}, {"dx", "dw"},
           {attr_ints("strides", {1, 1}), attr_ints("pads", {g.pad, g.pad, g.pad, g.pad}),
            attr_ints("dilations", {g.dilation, g.dilation}), attr_int("group", g.group)},
           kOnyxDomain);
    f.output("dx", {g.n, g.c, g.h, g.w}, onnx::TensorProto::FLOAT).output("dw", {g.m, cg, g.k, g.k}, onnx::TensorProto::FLOAT);
    auto* o = f.proto().add_opset_import();
    o->set_domain(kOnyxDomain);
    o->set_version(1);
    auto s = open_session(f.proto());
    auto tdy = tensor_from<float>(ONYX_DTYPE_FLOAT32, {g.n, g.m, oh, ow}, dy);
    auto tx = tensor_from<float>(ONYX_DTYPE_FLOAT32, {g.n, g.c, g.h, g.w}, x);
    auto tw = tensor_from<float>(ONYX_DTYPE_FLOAT32, {g.m, cg, g.k, g.k}, w);
    auto out = s->run({{"dy", &tdy}, {"x", &tx}, {"w", &tw}});
    const double u = std::ldexp(1.0, -24);
    auto check = [&](const char* what, const Tensor& got, const std::vector<double>& want,
                     const std::vector<double>& abs_sum, const std::vector<int64_t>& terms) {
      for (size_t i = 0; i < want.size(); ++i) {
        const double gamma = double(terms[i] + 1) * u / (1 - double(terms[i] + 1) * u);
        ASSERT_LE(std::fabs(double(got.data_as<float>()[i]) - want[i]), gamma * abs_sum[i] + 1e-30)
            << what << "[" << i << "], geometry n" << g.n << " c" << g.c << " m" << g.m << " " << g.h << "x" << g.w;
      }
    };
    check("dx", out[0], dx, dx_abs, dx_terms);
    check("dw", out[1], dw, dw_abs, dw_terms);
  }
}

}  // namespace
}  // namespace onyx::runtime::autodiff::testing
