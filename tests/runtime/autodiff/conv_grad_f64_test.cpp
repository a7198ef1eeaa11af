// conv_grad_f64_test.cpp: besides the end-to-end Conv checks (rules_test.cpp,
// which difference the provider's own Conv), this checks the
// ai.onyx::ConvGrad kernel the Conv rule emits in float64 against
// central differences of a float64 reference convolution (direct loops):
// for L(X, W) = sum(conv(X, W) * dY), dL/dX and dL/dW are ConvGrad's outputs.
// L is linear in X and W, so central differences are exact up to rounding
// (~1e-14 here); tolerance 1e-9.
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace onyx::runtime::autodiff::testing
