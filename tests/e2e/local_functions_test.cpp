// local_functions_test.cpp: models with their own functions (ModelProto.
// functions) run as the same graph written out by hand, through the public
// API; recursive, too deep or exploding functions are refused at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <chrono>

#include "e2e_util.h"

namespace onyx::e2e {
namespace {

using ::testing::HasSubstr;
namespace pb = ONNX_NAMESPACE;

pb::NodeProto node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                   const std::string& domain = "", const std::string& name = "") {
  pb::NodeProto n;
  n.set_op_type(op);
  n.set_domain(domain);
  n.set_name(name);
  for (auto& i : in) n.add_input(i);
  for (auto& o : out) n.add_output(o);
  return n;
}

pb::AttributeProto float_attr(const std::string& name, float v) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_type(pb::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

pb::AttributeProto ref_attr(const std::string& name, const std::string& ref) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_type(pb::AttributeProto::FLOAT);
  a.set_ref_attr_name(ref);
  return a;
}

pb::ValueInfoProto value(const std::string& name, int32_t type, std::vector<int64_t> dims) {
  pb::ValueInfoProto v;
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  return v;
}

pb::FunctionProto function(const std::string& name, std::vector<std::string> in, std::vector<std::string> out,
                           std::vector<pb::NodeProto> body, std::vector<std::string> attributes = {}) {
  pb::FunctionProto f;
  f.set_domain("local");
  f.set_name(name);
  for (auto& i : in) f.add_input(i);
  for (auto& o : out) f.add_output(o);
  for (auto& a : attributes) f.add_attribute(a);
  for (auto& n : body) *f.add_node() = n;
  auto* onnx = f.add_opset_import();
  onnx->set_version(18);
  auto* local = f.add_opset_import();
  local->set_domain("local");
  local->set_version(1);
  return f;
}

// FunctionProto.attribute_proto (field 11, IR 9) is newer than the onnx
// library Onyx builds against: written as the wire bytes a newer exporter
// writes.
std::string with_default(const pb::FunctionProto& f, const pb::AttributeProto& a) {
  std::string bytes = f.SerializeAsString(), attr = a.SerializeAsString();
  bytes.push_back(char(11 << 3 | 2));
  bytes.push_back(char(attr.size()));  // < 128 bytes
  return bytes + attr;
}

pb::ModelProto model_of(std::vector<pb::NodeProto> nodes) {
  pb::ModelProto m;
  m.set_ir_version(9);
  auto* onnx = m.add_opset_import();
  onnx->set_version(18);
  auto* local = m.add_opset_import();
  local->set_domain("local");
  local->set_version(1);
  auto* g = m.mutable_graph();
  g->set_name("main");
  *g->add_input() = value("x", pb::TensorProto::FLOAT, {2, 3});
  *g->add_input() = value("y", pb::TensorProto::FLOAT, {2, 3});
  *g->add_output() = value("out", pb::TensorProto::FLOAT, {2, 3});
  for (auto& n : nodes) *g->add_node() = n;
  return m;
}

// g(z) = Relu(z * z); f(x, y; alpha = 0.5) = LeakyRelu(x, alpha) + g(y).
// The main graph: out = f(f(x, y), x; alpha = 0.1).
pb::ModelProto with_functions() {
  pb::NodeProto leaky = node("LeakyRelu", {"x"}, {"a"});
  *leaky.add_attribute() = ref_attr("alpha", "alpha");
  pb::FunctionProto f = function("f", {"x", "y"}, {"out"},
                                 {leaky, node("g", {"y"}, {"b"}, "local"), node("Add", {"a", "b"}, {"out"})},
                                 {"alpha"});
  pb::FunctionProto g = function("g", {"z"}, {"w"}, {node("Mul", {"z", "z"}, {"t"}), node("Relu", {"t"}, {"w"})});
  pb::NodeProto second = node("f", {"o1", "x"}, {"out"}, "local", "call2");
  *second.add_attribute() = float_attr("alpha", 0.1f);
  pb::ModelProto m = model_of({node("f", {"x", "y"}, {"o1"}, "local", "call1"), second});
  m.add_functions()->ParseFromString(with_default(f, float_attr("alpha", 0.5f)));
  *m.add_functions() = g;
  return m;
}

pb::ModelProto written_out() {
  auto leaky = [](const std::string& in, const std::string& out, float alpha) {
    pb::NodeProto n = node("LeakyRelu", {in}, {out});
    *n.add_attribute() = float_attr("alpha", alpha);
    return n;
  };
  return model_of({leaky("x", "a1", 0.5f), node("Mul", {"y", "y"}, {"t1"}), node("Relu", {"t1"}, {"b1"}),
                   node("Add", {"a1", "b1"}, {"o1"}), leaky("o1", "a2", 0.1f), node("Mul", {"x", "x"}, {"t2"}),
                   node("Relu", {"t2"}, {"b2"}), node("Add", {"a2", "b2"}, {"out"})});
}

std::vector<float> run(onyx::Env& env, const pb::ModelProto& m) {
  const std::string bytes = m.SerializeAsString();
  onyx::Session s(env, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
  const std::vector<float> xv = {1.5f, -2.f, 0.25f, -0.5f, 3.f, -4.f}, yv = {-1.f, 2.f, 0.5f, -3.f, 0.f, 1.f};
  auto x = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {2, 3}, xv);
  auto y = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {2, 3}, yv);
  std::vector<onyx::Tensor> out = s.run({{"x", &x}, {"y", &y}});
  return std::vector<float>(out.at(0).data<float>(), out.at(0).data<float>() + 6);
}

std::string load_error(onyx::Env& env, const pb::ModelProto& m) {
  const std::string bytes = m.SerializeAsString();
  try {
    onyx::Session s(env, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
  } catch (const onyx::Error& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(LocalFunctions, RunAsTheGraphWrittenOutByHand) {
  onyx::Env env;
  const std::vector<float> expected = run(env, written_out());
  EXPECT_EQ(run(env, with_functions()), expected);
  // x = -4, y = 1: o1 = -4 * 0.5 (the function's default alpha) + 1 = -1;
  // out = -1 * 0.1 (the call's alpha) + 16.
  EXPECT_FLOAT_EQ(expected[5], 15.9f);
}

TEST(LocalFunctions, ACallInsideASubgraphIsExpandedToo) {
  pb::ModelProto m = with_functions();
  pb::NodeProto call = m.graph().node(1);  // out = f(o1, x; 0.1) moves into an If branch
  call.set_output(0, "then_out");
  pb::NodeProto branch = node("If", {"c"}, {"out"});
  pb::AttributeProto then_branch;
  then_branch.set_name("then_branch");
  then_branch.set_type(pb::AttributeProto::GRAPH);
  *then_branch.mutable_g()->add_node() = call;
  *then_branch.mutable_g()->add_output() = value("then_out", pb::TensorProto::FLOAT, {2, 3});
  pb::AttributeProto else_branch = then_branch;
  else_branch.set_name("else_branch");
  *branch.add_attribute() = then_branch;
  *branch.add_attribute() = else_branch;
  m.mutable_graph()->mutable_node()->RemoveLast();
  *m.mutable_graph()->add_node() = branch;
  pb::TensorProto* c = m.mutable_graph()->add_initializer();
  c->set_name("c");
  c->set_data_type(pb::TensorProto::BOOL);
  c->add_int32_data(1);
  onyx::Env env;
  EXPECT_EQ(run(env, m), run(env, written_out()));
}

TEST(LocalFunctions, RecursionDepthAndExpansionAreBounded) {
  onyx::Env env;
  // r calls itself.
  pb::ModelProto recursive = model_of({node("r", {"x"}, {"out"}, "local")});
  *recursive.add_functions() = function("r", {"a"}, {"b"}, {node("r", {"a"}, {"b"}, "local")});
  EXPECT_THAT(load_error(env, recursive), HasSubstr("local function local::r calls itself (local::r -> local::r)"));

  // A chain of 10,000: refused at depth 64, the chain shortened in the message.
  pb::ModelProto chain = model_of({node("f0", {"x"}, {"out"}, "local")});
  for (int i = 0; i < 10'000; ++i)
    *chain.add_functions() = function("f" + std::to_string(i), {"a"}, {"b"},
                                      {i == 9'999 ? node("Relu", {"a"}, {"b"})
                                                  : node("f" + std::to_string(i + 1), {"a"}, {"b"}, "local")});
  const std::string deep = load_error(env, chain);
  EXPECT_THAT(deep, HasSubstr("local function calls nest deeper than 64 (local::f0 -> local::f1"));
  EXPECT_LT(deep.size(), 600u);

  // Each level calls the next twice: 2^40 nodes from a few kilobytes,
  // refused before anything is expanded.
  pb::ModelProto laughs = model_of({node("f0", {"x"}, {"out"}, "local")});
  for (int i = 0; i < 40; ++i) {
    const std::string next = "f" + std::to_string(i + 1);
    *laughs.add_functions() =
        function("f" + std::to_string(i), {"a"}, {"b"},
                 i == 39 ? std::vector<pb::NodeProto>{node("Relu", {"a"}, {"b"})}
                         : std::vector<pb::NodeProto>{node(next, {"a"}, {"t"}, "local"), node(next, {"t"}, {"b"}, "local")});
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(load_error(env, laughs), HasSubstr("expanding its local functions takes more than 1000000 nodes"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST(LocalFunctions, ConflictingOpsetsAndDuplicatesAreRefused) {
  onyx::Env env;
  pb::ModelProto twice = with_functions();
  *twice.add_functions() = twice.functions(1);
  EXPECT_THAT(load_error(env, twice), HasSubstr("local function local::g is defined twice"));
  pb::ModelProto other_opset = with_functions();
  other_opset.mutable_functions(1)->mutable_opset_import(0)->set_version(13);
  EXPECT_THAT(load_error(env, other_opset), HasSubstr("imports opset '' 13, the model 18"));
}

}  // namespace
}  // namespace onyx::e2e
