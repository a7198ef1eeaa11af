// Shape inference of the com.microsoft QLinear ops (shape_rules_quantized.cpp):
// each output gets its 8-bit type and its ai.onnx counterpart's shape, so
// that later nodes can be claimed and memory planned.
#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace onyx::runtime::ir {
namespace {

using namespace testing;

constexpr int32_t U8 = ONYX_DTYPE_UINT8;
constexpr int32_t I8 = ONYX_DTYPE_INT8;
constexpr int32_t F = ONYX_DTYPE_FLOAT32;

// One com.microsoft node "n" reading `inputs` (graph inputs of the given
// types and shapes; "" an omitted one), writing "y".
struct Input {
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> dims;
};
StatusOr<Model> run(const std::string& op, const std::vector<Input>& inputs, std::vector<pb::AttributeProto> attrs = {}) {
  GraphBuilder g;
  std::vector<std::string> names;
  for (const Input& in : inputs) {
    names.push_back(in.name);
    if (!in.name.empty()) g.input(in.name, in.dtype, in.dims);
  }
  g.node(op, names, {"y"}, attrs, "n", "com.microsoft");
  g.output("y");
  pb::ModelProto m = make_model(g.proto());
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  return import(m);
}

const Value& y(const StatusOr<Model>& m) {
  static const Value none;
  if (!m.ok()) return none;
  const Value* v = find(m.value(), "y");
  return v ? *v : none;
}

std::vector<Input> scalar_params(const std::vector<std::string>& names, int32_t dtype) {
  std::vector<Input> out;
  for (const std::string& n : names) out.push_back({n, n.find("scale") != std::string::npos ? F : dtype, {}});
  return out;
}

TEST(QuantizedShapeRules, BinaryBroadcasts) {
  for (const char* op : {"QLinearAdd", "QLinearMul"}) {
    std::vector<Input> in = {{"a", I8, {2, 1, 5}}, {"as", F, {}}, {"az", I8, {}}, {"b", I8, {3, 1}},
                             {"bs", F, {}},        {"bz", I8, {}}, {"cs", F, {}}, {"cz", I8, {}}};
    auto m = run(op, in);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(y(m).dtype, I8) << op;
    EXPECT_EQ(y(m).dims, Shape({2, 3, 5})) << op;
  }
}

TEST(QuantizedShapeRules, UnaryKeepsShape) {
  for (const char* op : {"QLinearSigmoid", "QLinearLeakyRelu"}) {
    std::vector<Input> in = {{"x", U8, {4, -1}}};
    for (const Input& p : scalar_params({"xs", "xz", "ys", "yz"}, U8)) in.push_back(p);
    auto m = run(op, in);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(y(m).dtype, U8);
    EXPECT_EQ(y(m).dims, Shape({4, -1}));
  }
}

TEST(QuantizedShapeRules, AveragePoolBothLayouts) {
  std::vector<Input> in = {{"x", U8, {2, 3, 9, 10}}};
  for (const Input& p : scalar_params({"xs", "xz", "ys", "yz"}, U8)) in.push_back(p);
  const std::vector<pb::AttributeProto> attrs = {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}),
                                                 attr_ints("pads", {1, 1, 1, 1})};
  auto m = run("QLinearAveragePool", in, attrs);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(y(m).dims, Shape({2, 3, 5, 5}));
  in[0] = {"x", U8, {2, 9, 10, 3}};
  std::vector<pb::AttributeProto> last = attrs;
  last.push_back(attr_int("channels_last", 1));
  m = run("QLinearAveragePool", in, last);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(y(m).dims, Shape({2, 5, 5, 3}));

  in[0] = {"x", U8, {2, 3, 6, 7}};
  m = run("QLinearGlobalAveragePool", in);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(y(m).dims, Shape({2, 3, 1, 1}));
  m = run("QLinearGlobalAveragePool", in, {attr_int("channels_last", 1)});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(y(m).dims, Shape({2, 1, 1, 7}));
}

TEST(QuantizedShapeRules, ConcatReadsEveryThirdInput) {
  std::vector<Input> in = {{"ys", F, {}}, {"yz", I8, {}}, {"a", I8, {2, 3, 4}}, {"as", F, {}}, {"az", I8, {}},
                           {"b", I8, {2, 5, 4}}, {"bs", F, {}}, {"bz", I8, {}}};
  auto m = run("QLinearConcat", in, {attr_int("axis", 1)});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(y(m).dtype, I8);
  EXPECT_EQ(y(m).dims, Shape({2, 8, 4}));
  in[5] = {"b", I8, {3, 5, 4}};
  m = run("QLinearConcat", in, {attr_int("axis", 1)});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("differs from the others in dim 0"), std::string::npos) << m.status().to_string();
}

}  // namespace
}  // namespace onyx::runtime::ir
