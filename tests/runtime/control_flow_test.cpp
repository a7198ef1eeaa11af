// If, Loop and Scan run by the session (session/control_flow.h) on the CPU
// provider, against hand-computed results. All values are small integers or
// halves, exact in float32, so results are compared exactly.
#include <gtest/gtest.h>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

using testing::ModelBuilder;
namespace pb = ONNX_NAMESPACE;

constexpr int kFloat = 1, kInt64 = 7, kBool = 9;

pb::NodeProto& node_at(ModelBuilder& m, int index) { return *m.proto().mutable_graph()->mutable_node(index); }

void add_graph(pb::NodeProto& node, const std::string& name, ModelBuilder& sub) {
  pb::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::GRAPH);
  *a->mutable_g() = sub.proto().graph();
}

void add_ints(pb::NodeProto& node, const std::string& name, std::vector<int64_t> values) {
  pb::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void add_int(pb::NodeProto& node, const std::string& name, int64_t value) {
  pb::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INT);
  a->set_i(value);
}

StatusOr<std::unique_ptr<Session>> make_session(ProviderRegistry& registry, ModelBuilder& m) {
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  std::string bytes = m.bytes();
  ONYX_ASSIGN_OR_RETURN(ir::Model model, ir::load_model_from_bytes(bytes.data(), bytes.size(), ""));
  SessionOptions options;
  options.providers.push_back({"cpu", {}});
  options.fallback = FallbackPolicy::kFail;
  return Session::create(registry, std::move(model), options);
}

Tensor floats(Shape shape, std::vector<float> values) {
  Tensor t = Tensor::allocate(ONYX_DTYPE_FLOAT32, std::move(shape));
  std::copy(values.begin(), values.end(), t.data_as<float>());
  return t;
}

Tensor scalar_bool(bool v) {
  Tensor t = Tensor::allocate(ONYX_DTYPE_BOOL, {});
  *t.data_as<uint8_t>() = v;
  return t;
}

Tensor int64s(Shape shape, std::vector<int64_t> values) {
  Tensor t = Tensor::allocate(ONYX_DTYPE_INT64, std::move(shape));
  std::copy(values.begin(), values.end(), t.data_as<int64_t>());
  return t;
}

void expect_tensor(const Tensor& t, const Shape& shape, const std::vector<float>& values) {
  ASSERT_EQ(t.shape(), shape);
  ASSERT_EQ(t.dtype(), ONYX_DTYPE_FLOAT32);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(t.data_as<float>()[i], values[i]) << "element " << i;
}

// y = If(c): then x + 1 (shape [3]), else Concat(x, x) (shape [6]); both
// branches read x from the enclosing graph, so y's shape is known only at run time.
TEST(ControlFlow, IfPicksABranchWithItsOwnShape) {
  ModelBuilder then_branch, else_branch;
  then_branch.initializer("one", {1}, {1.f}).node("Add", {"x", "one"}, {"y_then"}).output("y_then", {3});
  else_branch.node("Concat", {"x", "x"}, {"y_else"}).output("y_else", {6});
  add_int(node_at(else_branch, 0), "axis", 0);
  ModelBuilder m;
  m.input("c", {}, kBool).input("x", {3}).node("If", {"c"}, {"y"}, "if0").output("y", {-1});
  add_graph(node_at(m, 0), "then_branch", then_branch);
  add_graph(node_at(m, 0), "else_branch", else_branch);
  ProviderRegistry registry;
  auto s = make_session(registry, m);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Tensor x = floats({3}, {1, 2, 3});
  auto taken = s.value()->run({{"c", scalar_bool(true)}, {"x", x}});
  ASSERT_TRUE(taken.ok()) << taken.status().to_string();
  expect_tensor(taken.value()[0], {3}, {2, 3, 4});
  auto not_taken = s.value()->run({{"c", scalar_bool(false)}, {"x", x}});
  ASSERT_TRUE(not_taken.ok()) << not_taken.status().to_string();
  expect_tensor(not_taken.value()[0], {6}, {1, 2, 3, 1, 2, 3});
}

// s = 0; repeat at most M times: s += inc (read from the enclosing graph);
// stop once s >= limit. Outputs the final s and every s, stacked.
ModelBuilder accumulate_loop() {
  ModelBuilder body;
  body.input("i", {}, kInt64).input("c_in", {}, kBool).input("s_in", {1})
      .node("Add", {"s_in", "inc"}, {"s_out"})
      .node("Less", {"s_out", "limit"}, {"c_out"})
      .node("Identity", {"s_out"}, {"s_scan"})
      .output("c_out", {1}, kBool).output("s_out", {1}).output("s_scan", {1});
  ModelBuilder m(13);
  m.input("M", {}, kInt64).input("s0", {1}).input("inc", {1}).input("limit", {1})
      .node("Loop", {"M", "", "s0"}, {"s_final", "s_all"}, "loop0")
      .output("s_final", {1}).output("s_all", {-1, 1});
  add_graph(node_at(m, 0), "body", body);
  return m;
}

TEST(ControlFlow, LoopStopsOnADataDependentConditionAndReadsTheEnclosingGraph) {
  ModelBuilder m = accumulate_loop();
  ProviderRegistry registry;
  auto s = make_session(registry, m);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto run = [&](int64_t max_trips) {
    return s.value()->run({{"M", int64s({}, {max_trips})}, {"s0", floats({1}, {0})},
                           {"inc", floats({1}, {1.5f})}, {"limit", floats({1}, {5})}});
  };
  // 1.5, 3, 4.5, 6: the condition turns false after the 4th iteration.
  auto by_condition = run(10);
  ASSERT_TRUE(by_condition.ok()) << by_condition.status().to_string();
  expect_tensor(by_condition.value()[0], {1}, {6});
  expect_tensor(by_condition.value()[1], {4, 1}, {1.5f, 3, 4.5f, 6});
  auto by_trip_count = run(2);
  ASSERT_TRUE(by_trip_count.ok()) << by_trip_count.status().to_string();
  expect_tensor(by_trip_count.value()[0], {1}, {3});
  expect_tensor(by_trip_count.value()[1], {2, 1}, {1.5f, 3});
  auto no_trips = run(0);
  ASSERT_TRUE(no_trips.ok()) << no_trips.status().to_string();
  expect_tensor(no_trips.value()[0], {1}, {0});
  EXPECT_EQ(no_trips.value()[1].shape(), (Shape{0, 1}));
}

// A Loop whose body holds an If: the branches read `inc` and `up` two scopes out.
TEST(ControlFlow, NestedIfInsideLoopReadsValuesTwoScopesOut) {
  ModelBuilder then_branch, else_branch, body;
  then_branch.node("Add", {"s_in", "inc"}, {"t"}).output("t", {1});
  else_branch.node("Sub", {"s_in", "inc"}, {"e"}).output("e", {1});
  body.input("i", {}, kInt64).input("c_in", {}, kBool).input("s_in", {1})
      .node("If", {"up"}, {"s_out"}, "if_in_body")
      .node("Identity", {"c_in"}, {"c_out"})
      .output("c_out", {}, kBool).output("s_out", {1});
  add_graph(node_at(body, 0), "then_branch", then_branch);
  add_graph(node_at(body, 0), "else_branch", else_branch);
  ModelBuilder m(16);
  m.input("M", {}, kInt64).input("up", {}, kBool).input("s0", {1}).input("inc", {1})
      .node("Loop", {"M", "", "s0"}, {"s_final"}, "loop0").output("s_final", {1});
  add_graph(node_at(m, 0), "body", body);
  ProviderRegistry registry;
  auto s = make_session(registry, m);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  for (bool up : {true, false}) {
    auto out = s.value()->run({{"M", int64s({}, {4})}, {"up", scalar_bool(up)},
                               {"s0", floats({1}, {1})}, {"inc", floats({1}, {2})}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_tensor(out.value()[0], {1}, {up ? 9.f : -7.f});
  }
}

// Running sum over the rows of x; the rows are read last-to-first when reversed.
ModelBuilder cumulative_sum_body() {
  ModelBuilder body;
  body.input("sum_in", {2}).input("row", {2})
      .node("Add", {"sum_in", "row"}, {"sum_out"})
      .node("Identity", {"sum_out"}, {"scan_out"})
      .output("sum_out", {2}).output("scan_out", {2});
  return body;
}

TEST(ControlFlow, ScanSumsRowsInEitherDirection) {
  for (bool reverse : {false, true}) {
    ModelBuilder body = cumulative_sum_body();
    ModelBuilder m(16);
    m.input("init", {2}).input("x", {3, 2})
        .node("Scan", {"init", "x"}, {"sum", "partial"}, "scan0")
        .output("sum", {2}).output("partial", {3, 2});
    add_graph(node_at(m, 0), "body", body);
    add_int(node_at(m, 0), "num_scan_inputs", 1);
    add_ints(node_at(m, 0), "scan_input_directions", {reverse ? 1 : 0});
    ProviderRegistry registry;
    auto s = make_session(registry, m);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    auto out = s.value()->run({{"init", floats({2}, {0, 0})}, {"x", floats({3, 2}, {1, 2, 3, 4, 5, 6})}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_tensor(out.value()[0], {2}, {9, 12});
    if (reverse) expect_tensor(out.value()[1], {3, 2}, {5, 6, 8, 10, 9, 12});
    else expect_tensor(out.value()[1], {3, 2}, {1, 2, 4, 6, 9, 12});
  }
}

// Scan-8: batch axis first, per-item sequence_lens; short items are zero-padded.
TEST(ControlFlow, Scan8HonoursSequenceLengths) {
  ModelBuilder body = cumulative_sum_body();
  ModelBuilder m(8);
  m.input("lens", {2}, kInt64).input("init", {2, 2}).input("x", {2, 3, 2})
      .node("Scan", {"lens", "init", "x"}, {"sum", "partial"}, "scan0")
      .output("sum", {2, 2}).output("partial", {2, 3, 2});
  add_graph(node_at(m, 0), "body", body);
  add_int(node_at(m, 0), "num_scan_inputs", 1);
  ProviderRegistry registry;
  auto s = make_session(registry, m);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto out = s.value()->run({{"lens", int64s({2}, {3, 2})}, {"init", floats({2, 2}, {0, 0, 100, 100})},
                             {"x", floats({2, 3, 2}, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60})}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_tensor(out.value()[0], {2, 2}, {9, 12, 140, 160});
  expect_tensor(out.value()[1], {2, 3, 2}, {1, 2, 4, 6, 9, 12, 110, 120, 140, 160, 0, 0});
}

TEST(ControlFlow, BranchWithTheWrongNumberOfOutputsIsRefused) {
  ModelBuilder then_branch, else_branch;
  then_branch.node("Neg", {"x"}, {"a"}).node("Abs", {"x"}, {"b"}).output("a", {3}).output("b", {3});
  else_branch.node("Neg", {"x"}, {"a"}).output("a", {3});
  ModelBuilder m;
  m.input("c", {}, kBool).input("x", {3}).node("If", {"c"}, {"y"}, "if0").output("y", {3});
  add_graph(node_at(m, 0), "then_branch", then_branch);
  add_graph(node_at(m, 0), "else_branch", else_branch);
  ProviderRegistry registry;
  auto s = make_session(registry, m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'if0'"), std::string::npos) << s.status().to_string();
  EXPECT_NE(s.status().message().find("outputs"), std::string::npos) << s.status().to_string();
}

TEST(ControlFlow, LoopBodyWithTheWrongNumberOfInputsIsRefused) {
  ModelBuilder body;  // lacks the loop-carried input
  body.input("i", {}, kInt64).input("c_in", {}, kBool)
      .node("Identity", {"c_in"}, {"c_out"}).node("Identity", {"s0"}, {"s_out"})
      .output("c_out", {}, kBool).output("s_out", {1});
  ModelBuilder m(13);
  m.input("M", {}, kInt64).input("s0", {1})
      .node("Loop", {"M", "", "s0"}, {"s_final"}, "loop0").output("s_final", {1});
  add_graph(node_at(m, 0), "body", body);
  ProviderRegistry registry;
  auto s = make_session(registry, m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("Loop 'loop0': subgraph 'body' has 2 inputs"), std::string::npos)
      << s.status().to_string();
}

// A sequence carried by a Loop, grown by SequenceInsert in the body from a
// captured tensor: the host carries it through the iterations.
TEST(ControlFlow, SequenceCarriedByALoopGrowsPerIteration) {
  ModelBuilder body;
  body.input("i", {}, kInt64).input("c_in", {}, kBool)
      .node("Identity", {"c_in"}, {"c_out"}).node("SequenceInsert", {"seq_in", "x"}, {"seq_out"})
      .output("c_out", {}, kBool);
  auto make_sequence = [](pb::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    v->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(kFloat);
  };
  pb::GraphProto* g = body.proto().mutable_graph();
  make_sequence(g->add_input(), "seq_in");
  make_sequence(g->add_output(), "seq_out");
  ModelBuilder m(13);
  m.input("M", {}, kInt64).input("x", {2}).node("Loop", {"M", "", "seq"}, {"seq_final"}, "loop0");
  make_sequence(m.proto().mutable_graph()->add_input(), "seq");
  make_sequence(m.proto().mutable_graph()->add_output(), "seq_final");
  add_graph(node_at(m, 0), "body", body);
  ProviderRegistry registry;
  auto s = make_session(registry, m);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto seq = Value::sequence(ONYX_DTYPE_FLOAT32, {floats({2}, {1, 2})});
  ASSERT_TRUE(seq.ok());
  auto out = (*s)->run_values({{"M", int64s({}, {3})}, {"x", floats({2}, {5, 6})}, {"seq", *seq}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const Value& result = out.value()[0];
  ASSERT_EQ(result.kind(), Value::Kind::kSequence);
  ASSERT_EQ(result.items().size(), 4u);
  expect_tensor(result.items()[0].tensor(), {2}, {1, 2});
  expect_tensor(result.items()[3].tensor(), {2}, {5, 6});
}

// A map in a subgraph's signature is refused with the reason.
TEST(ControlFlow, MapInASubgraphIsRefused) {
  ModelBuilder body;
  body.input("i", {}, kInt64).input("c_in", {}, kBool).node("Identity", {"c_in"}, {"c_out"})
      .node("Identity", {"m_in"}, {"m_out"}).output("c_out", {}, kBool);
  auto make_map = [](pb::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* map = v->mutable_type()->mutable_map_type();
    map->set_key_type(kInt64);
    map->mutable_value_type()->mutable_tensor_type()->set_elem_type(kFloat);
  };
  pb::GraphProto* g = body.proto().mutable_graph();
  make_map(g->add_input(), "m_in");
  make_map(g->add_output(), "m_out");
  ModelBuilder m(13);
  m.input("M", {}, kInt64).node("Loop", {"M", "", "m"}, {"m_final"}, "loop0");
  make_map(m.proto().mutable_graph()->add_input(), "m");
  make_map(m.proto().mutable_graph()->add_output(), "m_final");
  add_graph(node_at(m, 0), "body", body);
  ProviderRegistry registry;
  auto s = make_session(registry, m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'m_in' is a map or sparse tensor"), std::string::npos)
      << s.status().to_string();
}

}  // namespace
}  // namespace onyx::runtime
