// QDQ fusion (runtime/optimize/qdq_fusion.cpp): each test builds a small
// quantized model in QDQ form with uint8 input and output, checks which
// operator-form node the optimized graph holds, and compares its outputs
// with the same model run unfused (dequantize, float op, quantize): at most
// one quantization step apart, and at most 1% of the elements off by one.
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <tuple>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "optimize/graph_optimizer.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

namespace pb = ONNX_NAMESPACE;
using testing::ModelBuilder;

constexpr int kU8 = pb::TensorProto::UINT8, kI8 = pb::TensorProto::INT8, kI32 = pb::TensorProto::INT32;

// An initializer of any of float32, int64, or a type stored in int32_data.
void init(ModelBuilder& b, const std::string& name, int dtype, const std::vector<int64_t>& dims,
          const std::vector<double>& v) {
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(dtype);
  for (int64_t d : dims) t->add_dims(d);
  for (double x : v) {
    if (dtype == pb::TensorProto::FLOAT) t->add_float_data(float(x));
    else if (dtype == pb::TensorProto::INT64) t->add_int64_data(int64_t(x));
    else t->add_int32_data(int32_t(x));
  }
}

// in -> DequantizeLinear -> out, with scale(s) and zero point(s) as
// initializers "<out>_s", "<out>_z" (one each: per tensor, else along axis).
void dq(ModelBuilder& b, const std::string& in, const std::string& out, const std::vector<double>& scales,
        const std::vector<double>& zeros, int zero_type, int64_t axis = 1) {
  std::vector<int64_t> dims;  // a scalar per tensor, else one per element of the axis
  if (scales.size() > 1) dims.push_back(int64_t(scales.size()));
  init(b, out + "_s", pb::TensorProto::FLOAT, dims, scales);
  init(b, out + "_z", zero_type, dims, zeros);
  b.node("DequantizeLinear", {in, out + "_s", out + "_z"}, {out}, out + "_dq");
  if (scales.size() > 1) attr_int(b, "axis", axis);
}

void q(ModelBuilder& b, const std::string& in, const std::string& out, double scale, double zero, int type) {
  init(b, out + "_s", pb::TensorProto::FLOAT, {}, {scale});
  init(b, out + "_z", type, {}, {zero});
  b.node("QuantizeLinear", {in, out + "_s", out + "_z"}, {out}, out + "_q");
}

std::vector<double> random_ints(size_t n, std::mt19937& rng, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

Tensor random_u8(const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::allocate(ONYX_DTYPE_UINT8, shape);
  std::uniform_int_distribution<int> d(0, 255);
  for (int64_t i = 0; i < t.size(); ++i) t.data_as<uint8_t>()[i] = uint8_t(d(rng));
  return t;
}

int64_t int_at(const Tensor& t, int64_t i) {
  return t.dtype() == ONYX_DTYPE_INT8 ? int64_t(t.data_as<int8_t>()[i]) : int64_t(t.data_as<uint8_t>()[i]);
}

// One quantization step at most, and at most 1% of the elements off by one.
void expect_within_one_step(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  int64_t off = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    const int64_t d = std::abs(int_at(got, i) - int_at(want, i));
    EXPECT_LE(d, 1) << "element " << i;
    off += d != 0;
  }
  EXPECT_LE(off * 100, got.size()) << off << " of " << got.size() << " elements off by one";
  std::cout << "[ info     ] " << off << " of " << got.size() << " elements off by one\n";
}

class QdqFusionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.add_search_dir(ONYX_PROVIDER_DIR);
    registry_.add_search_dir(ONYX_TEST_PLUGIN_DIR);
  }

  std::unique_ptr<Session> session(const std::string& bytes, GraphOptimization level,
                                   std::vector<std::string> providers = {"cpu"}) {
    auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
    EXPECT_TRUE(model.ok()) << model.status().to_string();
    if (!model.ok()) return nullptr;
    SessionOptions options;
    for (const std::string& p : providers) options.providers.push_back({p, {}});
    options.fallback = FallbackPolicy::kAllow;
    options.intra_op_threads = 1;
    options.graph_optimization = level;
    auto s = Session::create(registry_, std::move(model).value(), options);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  static std::vector<std::string> ops(const Session& s) {
    std::vector<std::string> out;
    for (const ir::Node& n : s.graph().nodes) out.push_back(n.op_type);
    return out;
  }

  static Tensor run_one(Session& s, const std::vector<std::pair<std::string, Tensor>>& inputs) {
    auto out = s.run(inputs);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? out.value()[0] : Tensor();
  }

  // Runs `bytes` optimized and unoptimized on the CPU provider; compares.
  // Returns the optimized session for further checks.
  std::unique_ptr<Session> check_numerics(const std::string& bytes,
                                          const std::vector<std::pair<std::string, Tensor>>& inputs) {
    auto fused = session(bytes, GraphOptimization::kAll);
    auto plain = session(bytes, GraphOptimization::kOff);
    if (!fused || !plain) return nullptr;
    Tensor got = run_one(*fused, inputs), want = run_one(*plain, inputs);
    expect_within_one_step(got, want);
    return fused;
  }

  ProviderRegistry registry_;
};

// x u8 [1,C,H,W] -> DQ; w s8 per output channel -> DQ; bias s32 -> DQ;
// Conv (3x3, pads 1) [-> Relu] -> Q u8 -> y.
std::string conv_model(std::mt19937& rng, bool relu, double y_zero, double bias_scale_factor = 1.0) {
  const int64_t C = 3, M = 8, H = 10, W = 10;
  const double xs = 0.02;
  std::vector<double> ws(M);
  for (int64_t m = 0; m < M; ++m) ws[size_t(m)] = 0.005 + 0.001 * double(m);
  std::vector<double> bs(M);
  for (int64_t m = 0; m < M; ++m) bs[size_t(m)] = double(float(xs) * float(ws[size_t(m)])) * bias_scale_factor;
  ModelBuilder mb;
  mb.input("x", {1, C, H, W}, kU8).output("y", {1, M, H, W}, kU8);
  init(mb, "w", kI8, {M, C, 3, 3}, random_ints(size_t(M * C * 9), rng, -127, 127));
  init(mb, "b", kI32, {M}, random_ints(size_t(M), rng, -2000, 2000));
  dq(mb, "x", "xf", {xs}, {128}, kU8);
  dq(mb, "w", "wf", ws, std::vector<double>(size_t(M), 0), kI8, 0);
  dq(mb, "b", "bf", bs, std::vector<double>(size_t(M), 0), kI32, 0);
  mb.node("Conv", {"xf", "wf", "bf"}, {"c"}, "conv");
  attr_ints(mb, "pads", {1, 1, 1, 1});
  if (relu) mb.node("Relu", {"c"}, {"r"}, "relu");
  q(mb, relu ? "r" : "c", "y", 0.05, y_zero, kU8);
  return mb.bytes();
}

// ONNX Runtime's static quantizer, per-tensor weights: the bias's scale is
// written as [1] beside a scalar zero point (both one value: per tensor).
TEST_F(QdqFusionTest, BiasScaleOfShapeOneBesideAScalarZeroPointIsPerTensor) {
  std::mt19937 rng(7);
  const int64_t C = 3, M = 4, H = 6, W = 6;
  const double xs = 0.03, ws = 0.004;
  ModelBuilder mb;
  mb.input("x", {1, C, H, W}, kU8).output("y", {1, M, H, W}, kU8);
  init(mb, "w", kI8, {M, C, 3, 3}, random_ints(size_t(M * C * 9), rng, -127, 127));
  init(mb, "b", kI32, {M}, random_ints(size_t(M), rng, -2000, 2000));
  dq(mb, "x", "xf", {xs}, {128}, kU8);
  dq(mb, "w", "wf", {ws}, {0}, kI8);
  init(mb, "bf_s", pb::TensorProto::FLOAT, {1}, {double(float(xs) * float(ws))});
  init(mb, "bf_z", kI32, {}, {0});
  mb.node("DequantizeLinear", {"b", "bf_s", "bf_z"}, {"bf"}, "bf_dq");
  mb.node("Conv", {"xf", "wf", "bf"}, {"c"}, "conv");
  attr_ints(mb, "pads", {1, 1, 1, 1});
  q(mb, "c", "y", 0.05, 128, kU8);
  auto s = check_numerics(mb.bytes(), {{"x", random_u8({1, C, H, W}, rng)}});
  ASSERT_TRUE(s);
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"QLinearConv"}));
}

// A DequantizeLinear of constant weights that no group takes (a float Gemm
// with no Q after it, as a QDQ model's classifier) is computed once, at
// session creation (optimize/weight_dequantize_folding.cpp): per-axis int8
// weights with zero points and an int32 bias, outputs equal to the unfolded
// graph's exactly (the same float32 weights either way).
TEST_F(QdqFusionTest, DequantizeOfConstantWeightsIsFoldedOnce) {
  std::mt19937 rng(5);
  ModelBuilder mb;
  mb.input("x", {2, 6}).output("y", {2, 5});
  init(mb, "w", kI8, {6, 5}, random_ints(30, rng, -128, 127));
  init(mb, "b", kI32, {5}, random_ints(5, rng, -500, 500));
  dq(mb, "w", "wf", {0.01, 0.02, 0.03, 0.015, 0.025}, {0, 1, -2, 3, 0}, kI8, 1);
  dq(mb, "b", "bf", {0.001}, {0}, kI32);
  mb.node("Gemm", {"x", "wf", "bf"}, {"y"}, "gemm");
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 6});
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (int64_t i = 0; i < x.size(); ++i) x.data_as<float>()[i] = d(rng);
  auto folded = session(mb.bytes(), GraphOptimization::kAll);
  auto plain = session(mb.bytes(), GraphOptimization::kOff);
  ASSERT_TRUE(folded && plain);
  EXPECT_EQ(ops(*folded), (std::vector<std::string>{"Gemm"}));
  EXPECT_EQ(ops(*plain), (std::vector<std::string>{"DequantizeLinear", "DequantizeLinear", "Gemm"}));
  Tensor got = run_one(*folded, {{"x", x}}), want = run_one(*plain, {{"x", x}});
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.size(); ++i) EXPECT_EQ(got.data_as<float>()[i], want.data_as<float>()[i]) << i;
}

TEST_F(QdqFusionTest, ConvGroupBecomesQLinearConv) {
  std::mt19937 rng(1);
  const std::string model = conv_model(rng, false, 128);
  auto s = check_numerics(model, {{"x", random_u8({1, 3, 10, 10}, rng)}});
  ASSERT_TRUE(s);
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"QLinearConv"}));
  EXPECT_EQ(s->partition_report().optimization.qdq_groups_fused, 1);
  EXPECT_EQ(s->partition_report().optimization.qdq_fused_ops.at("QLinearConv"), 1);
  const std::string json = s->partition_report().to_json(s->graph());
  EXPECT_NE(json.find("\"qdq_groups_fused\":1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"QLinearConv\":1"), std::string::npos) << json;
  EXPECT_EQ(s->graph().values[size_t(s->graph().outputs[0])].name, "y");
}

// A Relu before a Q whose zero point is uint8's minimum is implied by
// saturation and dropped; with zero point 10 it is not, and the group stays.
TEST_F(QdqFusionTest, ReluImpliedBySaturationIsDropped) {
  std::mt19937 rng(2);
  auto s = check_numerics(conv_model(rng, true, 0), {{"x", random_u8({1, 3, 10, 10}, rng)}});
  ASSERT_TRUE(s);
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"QLinearConv"}));

  auto kept = check_numerics(conv_model(rng, true, 10), {{"x", random_u8({1, 3, 10, 10}, rng)}});
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->partition_report().optimization.qdq_groups_fused, 0);
}

TEST_F(QdqFusionTest, BiasWithAnotherScaleIsNotFused) {
  std::mt19937 rng(3);
  auto s = check_numerics(conv_model(rng, false, 128, 2.0), {{"x", random_u8({1, 3, 10, 10}, rng)}});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->partition_report().optimization.qdq_groups_fused, 0);
  // DQ of x, Conv, Q: the DQs of the constant weights and bias are folded
  // into float initializers (weight_dequantize_folding.cpp).
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"DequantizeLinear", "Conv", "QuantizeLinear"}));
}

// int8 activations: x s8 (zero point 0), y s8 after a Relu implied by
// the Q's zero point -128.
TEST_F(QdqFusionTest, SignedActivationsFuseToo) {
  std::mt19937 rng(14);
  ModelBuilder mb;
  mb.input("x", {1, 3, 10, 10}, kI8).output("y", {1, 8, 10, 10}, kI8);
  init(mb, "w", kI8, {8, 3, 3, 3}, random_ints(8 * 27, rng, -127, 127));
  dq(mb, "x", "xf", {0.02}, {0}, kI8);
  dq(mb, "w", "wf", {0.01}, {0}, kI8);
  mb.node("Conv", {"xf", "wf"}, {"c"}, "conv");
  attr_ints(mb, "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c"}, {"r"}, "relu");
  q(mb, "r", "y", 0.03, -128, kI8);
  Tensor x = Tensor::allocate(ONYX_DTYPE_INT8, {1, 3, 10, 10});
  const std::vector<double> xs = random_ints(300, rng, -128, 127);
  for (int64_t i = 0; i < x.size(); ++i) x.data_as<int8_t>()[i] = int8_t(xs[size_t(i)]);
  auto s = check_numerics(mb.bytes(), {{"x", x}});
  ASSERT_TRUE(s);
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"QLinearConv"}));
}

// Groups in a chain, as an exported model has them: Conv+Relu, MaxPool on
// the integers, Conv; each Q's output read by the next DQ.
TEST_F(QdqFusionTest, ChainedGroupsAllFuse) {
  std::mt19937 rng(15);
  ModelBuilder mb;
  mb.input("x", {1, 3, 10, 10}, kU8).output("y", {1, 4, 5, 5}, kU8);
  init(mb, "w1", kI8, {8, 3, 3, 3}, random_ints(8 * 27, rng, -127, 127));
  init(mb, "w2", kI8, {4, 8, 1, 1}, random_ints(32, rng, -127, 127));
  dq(mb, "x", "xf", {0.02}, {128}, kU8);
  dq(mb, "w1", "w1f", {0.01}, {0}, kI8);
  mb.node("Conv", {"xf", "w1f"}, {"c1"}, "conv1");
  attr_ints(mb, "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"}, "relu1");
  q(mb, "r1", "h1", 0.02, 0, kU8);
  dq(mb, "h1", "h1f", {0.02}, {0}, kU8);
  mb.node("MaxPool", {"h1f"}, {"p"}, "pool");
  attr_ints(mb, "kernel_shape", {2, 2});
  attr_ints(mb, "strides", {2, 2});
  q(mb, "p", "h2", 0.02, 0, kU8);
  dq(mb, "h2", "h2f", {0.02}, {0}, kU8);
  dq(mb, "w2", "w2f", {0.02}, {0}, kI8);
  mb.node("Conv", {"h2f", "w2f"}, {"c2"}, "conv2");
  q(mb, "c2", "y", 0.05, 128, kU8);
  auto s = check_numerics(mb.bytes(), {{"x", random_u8({1, 3, 10, 10}, rng)}});
  ASSERT_TRUE(s);
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"QLinearConv", "MaxPool", "QLinearConv"}));
  EXPECT_EQ(s->partition_report().optimization.qdq_groups_fused, 3);
}

// a u8 [32,48] -> DQ; b s8 [48,32] (per tensor or per column) -> DQ; MatMul -> Q.
std::string matmul_model(std::mt19937& rng, bool per_column) {
  const int64_t M = 32, K = 48, N = 32;
  ModelBuilder mb;
  mb.input("a", {M, K}, kU8).output("y", {M, N}, kU8);
  init(mb, "b", kI8, {K, N}, random_ints(size_t(K * N), rng, -127, 127));
  dq(mb, "a", "af", {0.03}, {120}, kU8);
  if (per_column) {
    std::vector<double> s(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) s[size_t(n)] = 0.002 + 0.0001 * double(n);
    dq(mb, "b", "bf", s, std::vector<double>(size_t(N), 0), kI8, 1);
  } else {
    dq(mb, "b", "bf", {0.004}, {0}, kI8);
  }
  mb.node("MatMul", {"af", "bf"}, {"m"}, "matmul");
  q(mb, "m", "y", 0.4, 128, kU8);
  return mb.bytes();
}

TEST_F(QdqFusionTest, MatMulGroupBecomesQLinearMatMul) {
  for (bool per_column : {false, true}) {
    std::mt19937 rng(4);
    auto s = check_numerics(matmul_model(rng, per_column), {{"a", random_u8({32, 48}, rng)}});
    ASSERT_TRUE(s);
    EXPECT_EQ(ops(*s), (std::vector<std::string>{"QLinearMatMul"})) << "per column " << per_column;
  }
}

// x u8 [1,4,8,8] -> DQ -> op -> Q (same scale and zero point) -> y: the op
// runs on the uint8 tensor and DQ/Q disappear; the result is exact.
TEST_F(QdqFusionTest, IntegerExactOpsRunOnTheIntegers) {
  struct Case {
    const char* op;
    std::vector<int64_t> out;
  };
  for (const Case& c : {Case{"MaxPool", {1, 4, 4, 4}}, Case{"Transpose", {1, 8, 8, 4}},
                        Case{"Reshape", {4, 64}}, Case{"Flatten", {1, 256}}}) {
    std::mt19937 rng(5);
    ModelBuilder mb;
    mb.input("x", {1, 4, 8, 8}, kU8).output("y", c.out, kU8);
    dq(mb, "x", "xf", {0.1}, {3}, kU8);
    const std::string op = c.op;
    if (op == "Reshape") {
      init(mb, "shape", pb::TensorProto::INT64, {2}, {4, 64});
      mb.node("Reshape", {"xf", "shape"}, {"t"}, "op");
    } else {
      mb.node(op, {"xf"}, {"t"}, "op");
    }
    if (op == "MaxPool") attr_ints(mb, "kernel_shape", {2, 2}), attr_ints(mb, "strides", {2, 2});
    if (op == "Transpose") attr_ints(mb, "perm", {0, 2, 3, 1});
    q(mb, "t", "y", 0.1, 3, kU8);
    Tensor x = random_u8({1, 4, 8, 8}, rng);
    auto s = check_numerics(mb.bytes(), {{"x", x}});
    ASSERT_TRUE(s);
    EXPECT_EQ(ops(*s), (std::vector<std::string>{op})) << op;
    auto plain = session(mb.bytes(), GraphOptimization::kOff);
    Tensor got = run_one(*s, {{"x", x}}), want = run_one(*plain, {{"x", x}});
    for (int64_t i = 0; i < got.size(); ++i) ASSERT_EQ(int_at(got, i), int_at(want, i)) << op << " at " << i;
  }
}

// Scales differ on both sides: the op is not exact on the integers.
TEST_F(QdqFusionTest, IntegerOpWithOtherOutputScaleStays) {
  ModelBuilder mb;
  mb.input("x", {1, 4, 8, 8}, kU8).output("y", {1, 256}, kU8);
  dq(mb, "x", "xf", {0.1}, {3}, kU8);
  mb.node("Flatten", {"xf"}, {"t"}, "op");
  q(mb, "t", "y", 0.2, 3, kU8);
  auto s = session(mb.bytes(), GraphOptimization::kAll);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->partition_report().optimization.qdq_groups_fused, 0);
}

// The com.microsoft forms, fused on the CPU provider (which has their kernels).
TEST_F(QdqFusionTest, ContribGroupsMatchTheUnfusedResult) {
  for (const char* op : {"Add", "Mul", "AveragePool", "GlobalAveragePool", "Concat", "Sigmoid", "LeakyRelu"}) {
    std::mt19937 rng(6);
    const std::string name = op;
    const bool binary = name == "Add" || name == "Mul" || name == "Concat";
    std::vector<int64_t> out = {1, 4, 8, 8};
    if (name == "AveragePool") out = {1, 4, 4, 4};
    if (name == "GlobalAveragePool") out = {1, 4, 1, 1};
    if (name == "Concat") out = {1, 8, 8, 8};
    ModelBuilder mb;
    // Scales with no simple ratio, as calibration gives: with 0.05 / 0.06 many
    // real results fall exactly halfway between two steps, and float32 noise in
    // either path decides those ties.
    mb.input("x", {1, 4, 8, 8}, kU8).output("y", out, kU8);
    dq(mb, "x", "xf", {0.0513}, {100}, kU8);
    if (binary) mb.input("z", {1, 4, 8, 8}, kU8), dq(mb, "z", "zf", {0.0297}, {140}, kU8);
    mb.node(name, binary ? std::vector<std::string>{"xf", "zf"} : std::vector<std::string>{"xf"}, {"t"}, "op");
    if (name == "AveragePool") attr_ints(mb, "kernel_shape", {2, 2}), attr_ints(mb, "strides", {2, 2});
    if (name == "Concat") attr_int(mb, "axis", 1);
    if (name == "LeakyRelu") attr_float(mb, "alpha", 0.1f);
    const double ys = name == "Mul" ? 0.1021 : name == "Sigmoid" ? 1.0 / 256 : 0.0617;
    q(mb, "t", "y", ys, name == "Sigmoid" ? 0 : 128, kU8);
    std::vector<std::pair<std::string, Tensor>> inputs = {{"x", random_u8({1, 4, 8, 8}, rng)}};
    if (binary) inputs.emplace_back("z", random_u8({1, 4, 8, 8}, rng));
    auto s = check_numerics(mb.bytes(), inputs);
    ASSERT_TRUE(s) << op;
    EXPECT_EQ(ops(*s), (std::vector<std::string>{"QLinear" + name})) << op;
  }
}

// --- the pass itself, with a stand-in for the session's providers ----------

ir::Model load(const std::string& bytes) {
  auto m = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

std::vector<std::string> node_ops(const ir::Graph& g) {
  std::vector<std::string> out;
  for (const ir::Node& n : g.nodes) out.push_back(n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type);
  return out;
}

// Every node is claimed by provider 0.
const ProviderRank kClaimsAll = [](const ir::Graph&, const ir::Node&) { return 0; };

TEST(QdqFusionPass, RecognisesEveryContribPattern) {
  struct Case {
    std::string op, fused;
    size_t inputs;
  };
  for (const Case& c : {Case{"Add", "com.microsoft::QLinearAdd", 8}, Case{"Mul", "com.microsoft::QLinearMul", 8},
                        Case{"AveragePool", "com.microsoft::QLinearAveragePool", 5},
                        Case{"GlobalAveragePool", "com.microsoft::QLinearGlobalAveragePool", 5},
                        Case{"Concat", "com.microsoft::QLinearConcat", 8},
                        Case{"Sigmoid", "com.microsoft::QLinearSigmoid", 5},
                        Case{"LeakyRelu", "com.microsoft::QLinearLeakyRelu", 5}}) {
    const bool binary = c.op == "Add" || c.op == "Mul" || c.op == "Concat";
    ModelBuilder mb;
    mb.input("x", {1, 4, 8, 8}, kU8).output("y", {-1, -1, -1, -1}, kU8);
    dq(mb, "x", "xf", {0.05}, {100}, kU8);
    if (binary) mb.input("z", {1, 4, 8, 8}, kU8), dq(mb, "z", "zf", {0.03}, {140}, kU8);
    mb.node(c.op, binary ? std::vector<std::string>{"xf", "zf"} : std::vector<std::string>{"xf"}, {"t"}, "op");
    if (c.op == "AveragePool") attr_ints(mb, "kernel_shape", {2, 2});
    if (c.op == "Concat") attr_int(mb, "axis", 1);
    q(mb, "t", "y", 0.06, 128, kU8);
    ir::Model m = load(mb.bytes());
    OptimizationReport report;
    ASSERT_TRUE(optimize_graph(*m.graph, GraphOptimization::kAll, &report, kClaimsAll).ok());
    EXPECT_EQ(node_ops(*m.graph), (std::vector<std::string>{c.fused})) << c.op;
    ASSERT_EQ(m.graph->nodes.size(), 1u);
    EXPECT_EQ(m.graph->nodes[0].inputs.size(), c.inputs) << c.op;
    EXPECT_EQ(m.graph->nodes[0].name, "op");
    EXPECT_EQ(m.graph->opset("com.microsoft"), 1);
    EXPECT_EQ(report.qdq_groups_fused, 1);
  }
}

// a u8 [16,32], B s8 [32,20] (transB 0) or [20,32] (transB 1) per column,
// C s32 [20] of scale factor * a_scale * b_scale.
std::string gemm_model(int64_t trans_b, double c_scale_factor, float beta) {
  const int64_t M = 16, K = 32, N = 20;
  std::mt19937 rng(8);
  ModelBuilder mb;
  mb.input("a", {M, K}, kU8).output("y", {M, N}, kU8);
  init(mb, "b", kI8, trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N},
       random_ints(size_t(K * N), rng, -100, 100));
  init(mb, "c", kI32, {N}, random_ints(size_t(N), rng, -5000, 5000));
  std::vector<double> bs, cs;
  for (int64_t n = 0; n < N; ++n) {
    bs.push_back(0.001 + 0.0002 * double(n));
    cs.push_back(double(0.02f * float(bs.back())) * c_scale_factor);
  }
  dq(mb, "a", "af", {0.02}, {128}, kU8);
  dq(mb, "b", "bf", bs, std::vector<double>(size_t(N), 0), kI8, trans_b ? 0 : 1);
  dq(mb, "c", "cf", cs, std::vector<double>(size_t(N), 0), kI32, 0);
  mb.node("Gemm", {"af", "bf", "cf"}, {"g"}, "gemm");
  attr_int(mb, "transB", trans_b);
  attr_float(mb, "beta", beta);
  q(mb, "g", "y", 0.05, 128, kU8);
  return mb.bytes();
}

// Through a CPU session, which runs com.microsoft QGemm.
TEST_F(QdqFusionTest, GemmGroupMatchesTheUnfusedResult) {
  for (auto [trans_b, factor, beta] : {std::tuple{0, 1.0, 1.0f}, std::tuple{1, 1.0, 1.0f}, std::tuple{0, 2.0, 0.5f}}) {
    std::mt19937 rng(16);
    auto s = check_numerics(gemm_model(trans_b, factor, beta), {{"a", random_u8({16, 32}, rng)}});
    ASSERT_TRUE(s);
    EXPECT_EQ(ops(*s), (std::vector<std::string>{"QGemm"})) << "transB " << trans_b << ", beta " << beta;
  }
}

TEST(QdqFusionPass, GemmBecomesQGemmOnlyWhereItsSemanticsFit) {
  for (int64_t trans_b : {0, 1}) {
    ir::Model m = load(gemm_model(trans_b, 1.0, 1.0f));
    ASSERT_TRUE(optimize_graph(*m.graph, GraphOptimization::kAll, nullptr, kClaimsAll).ok());
    EXPECT_EQ(node_ops(*m.graph), (std::vector<std::string>{"com.microsoft::QGemm"})) << "transB " << trans_b;
    EXPECT_EQ(m.graph->nodes[0].attr_int("transB", -1), trans_b);
    EXPECT_EQ(m.graph->nodes[0].inputs.size(), 9u);
    EXPECT_EQ(m.graph->nodes[0].domain, "com.microsoft");
  }
  // C's scale must be alpha / beta * a_scale * b_scale (QGemm has no beta).
  for (auto [factor, beta, fuses] : {std::tuple{2.0, 1.0f, 0}, std::tuple{1.0, 0.5f, 0}, std::tuple{2.0, 0.5f, 1}}) {
    ir::Model m = load(gemm_model(0, factor, beta));
    OptimizationReport report;
    ASSERT_TRUE(optimize_graph(*m.graph, GraphOptimization::kAll, &report, kClaimsAll).ok());
    EXPECT_EQ(report.qdq_groups_fused, fuses) << "C scale factor " << factor << ", beta " << beta;
  }
}

TEST(QdqFusionPass, NothingIsFusedThatNoProviderClaims) {
  std::mt19937 rng(9);
  const std::string bytes = matmul_model(rng, false);
  for (bool with_providers : {false, true}) {
    ir::Model m = load(bytes);
    OptimizationReport report;
    const ProviderRank none = [](const ir::Graph&, const ir::Node&) { return -1; };
    ASSERT_TRUE(optimize_graph(*m.graph, GraphOptimization::kAll, &report, with_providers ? none : ProviderRank{}).ok());
    EXPECT_EQ(report.qdq_groups_fused, 0);
    // DQ of a, MatMul, Q (the DQ of the constant b is folded into a float initializer).
    std::vector<std::string> ops;
    for (const ir::Node& n : m.graph->nodes) ops.push_back(n.op_type);
    EXPECT_EQ(ops, (std::vector<std::string>{"DequantizeLinear", "MatMul", "QuantizeLinear"}));
  }
  // Claimed, but only by a provider ranked after the one running float MatMul.
  ir::Model m = load(bytes);
  const ProviderRank later = [](const ir::Graph&, const ir::Node& n) { return n.op_type == "MatMul" ? 0 : 1; };
  OptimizationReport report;
  ASSERT_TRUE(optimize_graph(*m.graph, GraphOptimization::kAll, &report, later).ok());
  EXPECT_EQ(report.qdq_groups_fused, 0);
}

// A DQ read elsewhere too stays for that reader; the group still fuses.
TEST(QdqFusionPass, ADequantizeReadElsewhereStays) {
  std::mt19937 rng(10);
  ModelBuilder mb;
  mb.input("a", {4, 6}, kU8).output("y", {4, 5}, kU8).output("other", {4, 6});
  init(mb, "b", kI8, {6, 5}, random_ints(30, rng, -100, 100));
  dq(mb, "a", "af", {0.5}, {128}, kU8);
  dq(mb, "b", "bf", {0.01}, {0}, kI8);
  mb.node("MatMul", {"af", "bf"}, {"m"}, "matmul");
  mb.node("Neg", {"af"}, {"other"}, "neg");
  q(mb, "m", "y", 0.3, 128, kU8);
  ir::Model m = load(mb.bytes());
  OptimizationReport report;
  ASSERT_TRUE(optimize_graph(*m.graph, GraphOptimization::kAll, &report, kClaimsAll).ok());
  EXPECT_EQ(report.qdq_groups_fused, 1);
  EXPECT_EQ(node_ops(*m.graph), (std::vector<std::string>{"DequantizeLinear", "QLinearMatMul", "Neg"}));
}

// The op's float output read elsewhere, or a scale that is a graph input:
// the group's meaning is not all in the operator form, nothing is fused.
TEST(QdqFusionPass, OpOutputReadElsewhereOrVariableScaleIsNotFused) {
  for (bool variable_scale : {false, true}) {
    std::mt19937 rng(11);
    ModelBuilder mb;
    mb.input("a", {4, 6}, kU8).output("y", {4, 5}, kU8);
    if (variable_scale) mb.input("af_s", {});
    init(mb, "b", kI8, {6, 5}, random_ints(30, rng, -100, 100));
    if (variable_scale) {
      init(mb, "af_z", kU8, {}, {128});
      mb.node("DequantizeLinear", {"a", "af_s", "af_z"}, {"af"}, "af_dq");
    } else {
      dq(mb, "a", "af", {0.5}, {128}, kU8);
      mb.output("m", {4, 5});  // the float product is a graph output too
    }
    dq(mb, "b", "bf", {0.01}, {0}, kI8);
    mb.node("MatMul", {"af", "bf"}, {"m"}, "matmul");
    q(mb, "m", "y", 0.3, 128, kU8);
    ir::Model m = load(mb.bytes());
    OptimizationReport report;
    ASSERT_TRUE(optimize_graph(*m.graph, GraphOptimization::kAll, &report, kClaimsAll).ok());
    EXPECT_EQ(report.qdq_groups_fused, 0) << "variable scale " << variable_scale;
  }
}

// Clip(0, 6) before a Q of scale 6/255 and zero point 0 changes nothing the
// Q keeps (ReLU6 in QDQ form): dropped. Clip(0, 3) clamps inside the range: kept.
TEST(QdqFusionPass, ClipImpliedBySaturationIsDroppedOnlyThen) {
  for (double hi : {6.0, 3.0}) {
    std::mt19937 rng(13);
    ModelBuilder mb;
    mb.input("a", {4, 6}, kU8).output("y", {4, 5}, kU8);
    init(mb, "b", kI8, {6, 5}, random_ints(30, rng, -100, 100));
    init(mb, "lo", pb::TensorProto::FLOAT, {}, {0.0});
    init(mb, "hi", pb::TensorProto::FLOAT, {}, {hi});
    dq(mb, "a", "af", {0.5}, {128}, kU8);
    dq(mb, "b", "bf", {0.01}, {0}, kI8);
    mb.node("MatMul", {"af", "bf"}, {"m"}, "matmul");
    mb.node("Clip", {"m", "lo", "hi"}, {"c"}, "clip");
    q(mb, "c", "y", double(6.0f / 255.0f), 0, kU8);
    ir::Model m = load(mb.bytes());
    OptimizationReport report;
    ASSERT_TRUE(optimize_graph(*m.graph, GraphOptimization::kAll, &report, kClaimsAll).ok());
    EXPECT_EQ(report.qdq_groups_fused, hi == 6.0 ? 1 : 0) << "Clip(0, " << hi << ")";
  }
}

// --- through the ABI: a provider that runs QLinearMatMul but not MatMul ----

// With "qmatmul" (tests/plugins/qmatmul_plugin.cpp) listed first, the group
// becomes QLinearMatMul because that plugin claims it, and runs there.
TEST_F(QdqFusionTest, APluginClaimingOnlyTheOperatorFormRunsTheGroup) {
  for (bool per_column : {false, true}) {
    std::mt19937 rng(12);
    const std::string bytes = matmul_model(rng, per_column);
    auto s = session(bytes, GraphOptimization::kAll, {"qmatmul", "cpu"});
    auto plain = session(bytes, GraphOptimization::kOff, {"cpu"});
    ASSERT_TRUE(s && plain);
    ASSERT_EQ(ops(*s), (std::vector<std::string>{"QLinearMatMul"}));
    const PartitionReport& report = s->partition_report();
    ASSERT_EQ(report.devices[size_t(report.nodes[0].device)], "qmatmul");
    EXPECT_FALSE(report.is_fallback(report.nodes[0]));
    Tensor a = random_u8({32, 48}, rng);
    expect_within_one_step(run_one(*s, {{"a", a}}), run_one(*plain, {{"a", a}}));
  }
}

}  // namespace
}  // namespace onyx::runtime
