// The dynamically quantized MatMul as ONNX Runtime's quantize_dynamic writes
// it (runtime/optimize/dynamic_quantize_fusion.cpp): DynamicQuantizeLinear,
// MatMulInteger, Cast, Mul by a_scale * b_scale, Add bias, fused into one
// com.microsoft DynamicQuantizeMatMul; both forms against a float64
// reference of the same arithmetic.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "optimize/cpu_session.h"
#include "optimize/graph_optimizer.h"

namespace onyx::runtime {
namespace {

namespace pb = ONNX_NAMESPACE;
using testing::ModelBuilder;

constexpr int64_t kM = 3, kK = 8, kN = 4;

// A's values are multiples of 0.01 from -1.28 to 1.27, both present: its
// dynamic scale is 0.01 and zero point 128, so quantizing is exact and the
// reference needs no rounding of its own.
std::vector<float> a_values() {
  std::vector<float> a(size_t(kM * kK));
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int((i * 37) % 256) - 128) * 0.01f;
  a[0] = -1.28f;
  a[1] = 1.27f;
  return a;
}

std::vector<int8_t> weights() {
  std::vector<int8_t> w(size_t(kK * kN));
  for (size_t i = 0; i < w.size(); ++i) w[i] = int8_t(int((i * 53) % 255) - 127);
  return w;
}

const std::vector<float> kBScale = {0.02f, 0.5f, 0.125f, 0.003f};
const std::vector<float> kBias = {1.f, -2.f, 0.25f, 0.f};

// `int32_output`: the MatMulInteger result is also a graph output, which
// keeps the chain unfused.
std::string model(bool int32_output) {
  ModelBuilder mb(17);
  mb.input("x", {kM, kK}).output("y", {kM, kN});
  if (int32_output) mb.output("acc", {kM, kN}, pb::TensorProto::INT32);
  auto* w = mb.proto().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(pb::TensorProto::INT8);
  w->add_dims(kK);
  w->add_dims(kN);
  std::vector<int8_t> wv = weights();
  w->set_raw_data(std::string(reinterpret_cast<const char*>(wv.data()), wv.size()));
  auto* wz = mb.proto().mutable_graph()->add_initializer();
  wz->set_name("w_zero");
  wz->set_data_type(pb::TensorProto::INT8);
  wz->add_int32_data(3);
  mb.initializer("b_scale", {kN}, kBScale).initializer("bias", {kN}, kBias);
  mb.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"}, "dql");
  mb.node("Mul", {"xs", "b_scale"}, {"scale"}, "scale");
  mb.node("MatMulInteger", {"xq", "w", "xz", "w_zero"}, {"acc"}, "matmul");
  mb.node("Cast", {"acc"}, {"accf"}, "cast");
  attr_int(mb, "to", pb::TensorProto::FLOAT);
  mb.node("Mul", {"accf", "scale"}, {"scaled"}, "dequantize");
  mb.node("Add", {"scaled", "bias"}, {"y"}, "bias");
  return mb.bytes();
}

std::vector<double> reference() {
  const std::vector<float> a = a_values();
  const std::vector<int8_t> w = weights();
  const double a_scale = double(float(2.55 / 255.0));  // what DynamicQuantizeLinear computes in float32
  std::vector<double> y(size_t(kM * kN));
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kN; ++j) {
      int64_t acc = 0;
      for (int64_t k = 0; k < kK; ++k)
        acc += int64_t(std::lround(a[size_t(i * kK + k)] / 0.01f)) * (int64_t(w[size_t(k * kN + j)]) - 3);
      y[size_t(i * kN + j)] = double(acc) * a_scale * double(kBScale[size_t(j)]) + double(kBias[size_t(j)]);
    }
  return y;
}

class DynamicQuantizeFusionTest : public ::testing::Test {
 protected:
  void SetUp() override { registry_.add_search_dir(ONYX_PROVIDER_DIR); }

  std::unique_ptr<Session> session(const std::string& bytes, GraphOptimization level) {
    return cpu_session(registry_, bytes, level);
  }

  static std::vector<std::string> ops(const Session& s) {
    std::vector<std::string> out;
    for (const ir::Node& n : s.graph().nodes) out.push_back(n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type);
    return out;
  }

  ProviderRegistry registry_;
};

TEST_F(DynamicQuantizeFusionTest, TheChainBecomesOneNodeAndBothMatchFloat64) {
  auto fused = session(model(false), GraphOptimization::kAll);
  auto plain = session(model(false), GraphOptimization::kOff);
  ASSERT_TRUE(fused && plain);
  EXPECT_EQ(ops(*fused), std::vector<std::string>{"com.microsoft::DynamicQuantizeMatMul"});
  EXPECT_EQ(fused->partition_report().optimization.fused_patterns.at("DynamicQuantizeMatMul"), 1);
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {kM, kK});
  const std::vector<float> a = a_values();
  std::copy(a.begin(), a.end(), x.data_as<float>());
  const std::vector<double> ref = reference();
  std::vector<std::vector<float>> results;
  for (Session* s : {fused.get(), plain.get()}) {
    auto out = s->run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    const float* y = out.value()[0].data_as<float>();
    results.emplace_back(y, y + ref.size());
    for (size_t i = 0; i < ref.size(); ++i)  // float32 products of exact integers: a few ulps
      EXPECT_NEAR(y[i], ref[i], 1e-5 * std::fabs(ref[i]) + 1e-6)
          << (s == fused.get() ? "fused" : "unfused") << " element " << i;
  }
  // The fused kernel dequantizes in float32 as Cast, Mul and Add do.
  EXPECT_EQ(results[0], results[1]);
}

TEST_F(DynamicQuantizeFusionTest, AnIntermediateReadOutsideKeepsTheChain) {
  auto s = session(model(true), GraphOptimization::kAll);
  ASSERT_TRUE(s);
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"DynamicQuantizeLinear", "Mul", "MatMulInteger", "Cast", "Mul", "Add"}));
}

}  // namespace
}  // namespace onyx::runtime
