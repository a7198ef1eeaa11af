// gradient_model_test.cpp: build_gradient_model's vector-Jacobian products
// against the same products computed by hand in float64, and its errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "grad_check.h"

namespace onyx::runtime::autodiff::testing {
namespace {

using ::testing::HasSubstr;

// y = tanh(x W) and h = x W are both outputs: the upstream gradients of the
// two add up at h.
Forward two_outputs() {
  Forward f;
  f.input("x", {2, 3}).param("W", {3, 4});
  f.node("MatMul", {"x", "W"}, {"h"}).node("Tanh", {"h"}, {"y"});
  f.output("y", {2, 4}).output("h", {2, 4});
  return f;
}

TEST(GradientModel, VectorJacobianProductsOfInputsAndInitializers) {
  Forward f = two_outputs();
  auto built = build_gradient_model(f.proto(), {"x", "W"});
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const auto& g = built.value().graph();
  std::vector<std::string> inputs, outputs;
  for (const auto& i : g.input()) inputs.push_back(i.name());
  for (const auto& o : g.output()) outputs.push_back(o.name());
  EXPECT_EQ(inputs, (std::vector<std::string>{"x", "y_grad", "h_grad"}));
  EXPECT_EQ(outputs, (std::vector<std::string>{"y", "h", "x_grad", "W_grad"}));

  std::vector<double> x = {0.5, -1.0, 0.25, 2.0, 0.0, -0.75}, gy(8), gh(8);
  for (size_t k = 0; k < 8; ++k) gy[k] = 0.1 * double(k) - 0.3, gh[k] = 0.05 * double(k * k % 5) - 0.1;
  Tensor w = tensor_of(built.value().graph().initializer(0));
  const double* W = w.data_as<double>();
  Tensor tx = tensor_from<double>(ONYX_DTYPE_FLOAT64, {2, 3}, x);
  Tensor tgy = tensor_from<double>(ONYX_DTYPE_FLOAT64, {2, 4}, gy);
  Tensor tgh = tensor_from<double>(ONYX_DTYPE_FLOAT64, {2, 4}, gh);
  auto out = open_session(built.value())->run({{"x", &tx}, {"y_grad", &tgy}, {"h_grad", &tgh}});
  ASSERT_EQ(out.size(), 4u);

  // By hand: dh = gy (1 - tanh(h)^2) + gh; dx = dh W^T; dW = x^T dh.
  std::vector<double> dh(8), dx(6, 0.0), dw(12, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double h = 0;
      for (int k = 0; k < 3; ++k) h += x[size_t(i * 3 + k)] * W[k * 4 + j];
      double t = std::tanh(h);
      dh[size_t(i * 4 + j)] = gy[size_t(i * 4 + j)] * (1 - t * t) + gh[size_t(i * 4 + j)];
    }
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 4; ++j) {
        dx[size_t(i * 3 + k)] += dh[size_t(i * 4 + j)] * W[k * 4 + j];
        dw[size_t(k * 4 + j)] += x[size_t(i * 3 + k)] * dh[size_t(i * 4 + j)];
      }
  // float64 both ways, a handful of operations per element: rounding only.
  for (size_t k = 0; k < 6; ++k) EXPECT_NEAR(out[2].data_as<double>()[k], dx[k], 1e-12) << "x_grad " << k;
  for (size_t k = 0; k < 12; ++k) EXPECT_NEAR(out[3].data_as<double>()[k], dw[k], 1e-12) << "W_grad " << k;
}

TEST(GradientModel, ClearErrors) {
  Forward f = two_outputs();
  auto missing = build_gradient_model(f.proto(), {"x", "V"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ONYX_STATUS_NOT_FOUND);
  EXPECT_THAT(missing.status().message(), HasSubstr("'V'"));

  Forward ints;
  ints.input("x", {3}).node("ArgMax", {"x"}, {"i"}).output("i", {1}, onnx::TensorProto::INT64);
  auto no_float = build_gradient_model(ints.proto(), {"x"});
  ASSERT_FALSE(no_float.ok());
  EXPECT_THAT(no_float.status().message(), HasSubstr("no floating-point output"));

  Forward clash;
  clash.input("x", {3}).input("y_grad", {3}).node("Add", {"x", "y_grad"}, {"y"}).output("y", {3});
  auto taken = build_gradient_model(clash.proto(), {"x"});
  ASSERT_FALSE(taken.ok());
  EXPECT_THAT(taken.status().message(), HasSubstr("'y_grad'"));
}

}  // namespace
}  // namespace onyx::runtime::autodiff::testing
