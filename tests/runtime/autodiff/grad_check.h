// grad_check.h: builds small float64 forward models and checks the
// gradients of build_training_models' training model against central finite
// differences of its eval model, both run by the CPU provider.
//
// The models run on the internals (onyx::runtime::Session over a
// ProviderRegistry), like autodiff itself: this test links the static core
// and not libonyx, so it carries one core.
//
// Tolerance: with step h = 1e-5 in float64 the central difference has
// truncation error ~h^2 |f'''| ~ 1e-10 and rounding error ~eps |f| / h ~ 1e-11
// for the O(1) losses used here, so analytic and numeric gradients must agree
// to |a - n| <= 1e-6 * max(1, |n|): a wrong rule is off by O(1).
#pragma once

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "autodiff/training_model.h"
#include "core/tensor.h"
#include "plugin/provider.h"
#include "session/session.h"

namespace onyx::runtime::autodiff::testing {

namespace onnx = ONNX_NAMESPACE;

// A forward model under construction (ai.onnx opset 17 unless told).
class Forward {
 public:
  explicit Forward(int64_t opset = 17);
  // A float64 initializer with uniform random values in [lo, hi).
  Forward& param(const std::string& name, std::vector<int64_t> dims, double lo = -1, double hi = 1);
  Forward& param_values(const std::string& name, std::vector<int64_t> dims, std::vector<double> values);
  // A float32 initializer (for ops whose forward CPU kernel is float32 only).
  Forward& param32(const std::string& name, std::vector<int64_t> dims);
  Forward& ints(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> values);
  Forward& input(const std::string& name, std::vector<int64_t> dims, int32_t dtype = onnx::TensorProto::DOUBLE);
  Forward& output(const std::string& name, std::vector<int64_t> dims, int32_t dtype = onnx::TensorProto::DOUBLE);
  Forward& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                std::vector<onnx::AttributeProto> attrs = {}, const std::string& domain = "");
  onnx::ModelProto& proto() { return model_; }
  std::mt19937& rng() { return rng_; }

 private:
  onnx::ModelProto model_;
  std::mt19937 rng_{1234};
  int counter_ = 0;
};

// The custom loss sum_k sum(y_k * w_k) with fixed random weights w_k over
// every float output of `forward` (declared shapes must be static).
onnx::ModelProto weighted_sum_loss(const onnx::ModelProto& forward, uint32_t seed = 99);

struct GradCheckResult {
  double worst_error = 0;       // max over elements of |a - n| / max(1, |n|)
  std::string worst_place;      // "param[index]: analytic a, numeric n"
  size_t elements_checked = 0;
  double max_abs_gradient = 0;  // guards against a test whose gradients are all zero
};

// Builds the training and eval models of `forward` with `spec` (default: the
// weighted-sum custom loss), runs them with the initial parameter values and
// `feeds`, and compares every trainable element with central differences.
// Float32 parameters are checked with `step32` (only sound for losses linear in
// each parameter, where central differences are exact up to rounding).
GradCheckResult check_gradients(const onnx::ModelProto& forward, const TrainingSpec* spec = nullptr,
                                const std::vector<std::pair<std::string, std::shared_ptr<Tensor>>>& feeds = {},
                                double step32 = 0.5);

// Asserts (gtest) that `forward`'s gradients pass; `what` names the case.
void expect_gradients_match(const onnx::ModelProto& forward, const std::string& what,
                            const TrainingSpec* spec = nullptr,
                            const std::vector<std::pair<std::string, std::shared_ptr<Tensor>>>& feeds = {},
                            double tolerance = 1e-6, double step32 = 0.5);

// A failed run; what() is the session's status message.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A session on the CPU provider (fallback: fail) that throws RunError.
class TestSession {
 public:
  explicit TestSession(std::unique_ptr<Session> session) : session_(std::move(session)) {}
  // Inputs by name; the requested outputs (all when empty).
  std::vector<Tensor> run(const std::vector<std::pair<std::string, const Tensor*>>& inputs,
                          const std::vector<std::string>& outputs = {});

 private:
  std::unique_ptr<Session> session_;
};

ProviderRegistry& test_registry();  // with the CPU provider's folder added
// Serializes `model` and opens a session on it; throws RunError.
std::unique_ptr<TestSession> open_session(const onnx::ModelProto& model);
Tensor tensor_of(const onnx::TensorProto& t);  // float32/float64/int32/int64 initializers

// A tensor holding `values` (their count must match `dims`).
template <typename T>
Tensor tensor_from(int32_t dtype, std::vector<int64_t> dims, std::span<const T> values) {
  Tensor t = Tensor::allocate(dtype, std::move(dims));
  if (size_t(t.size()) != values.size()) throw std::invalid_argument("tensor_from: size mismatch");
  std::copy(values.begin(), values.end(), t.data_as<T>());
  return t;
}
template <typename T>
Tensor tensor_from(int32_t dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
  return tensor_from<T>(dtype, std::move(dims), std::span<const T>(values));
}

}  // namespace onyx::runtime::autodiff::testing
