// graph.h utilities: values, attributes, opsets, topological order.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/graph.h"
#include "ir_test_util.h"

namespace onyx::runtime::ir {
namespace {

using namespace testing;

// A graph built by hand: values by name, nodes by (op, inputs, outputs).
struct HandGraph {
  Graph g;
  int value(const std::string& name) {
    int v = g.find_value(name);
    if (v >= 0) return v;
    Value x;
    x.name = name;
    return g.add_value(x);
  }
  void node(const std::string& name, std::vector<std::string> ins, std::vector<std::string> outs) {
    Node n;
    n.name = name;
    n.op_type = "Op";
    for (auto& i : ins) n.inputs.push_back(value(i));
    for (auto& o : outs) n.outputs.push_back(value(o));
    g.nodes.push_back(n);
  }
  std::vector<std::string> order() {
    auto o = g.topological_order();
    EXPECT_TRUE(o.ok()) << o.status().to_string();
    std::vector<std::string> names;
    if (o.ok())
      for (int n : *o) names.push_back(g.nodes[size_t(n)].name);
    return names;
  }
};

TEST(Value, ShapeKnown) {
  Value v;
  EXPECT_FALSE(v.shape_known());  // rank unknown
  v.rank = 0;
  EXPECT_TRUE(v.shape_known());   // a scalar
  v.rank = 2;
  v.dims = {2, -1};
  EXPECT_FALSE(v.shape_known());
  v.dims = {2, 0};
  EXPECT_TRUE(v.shape_known());
  v.dims = {2};  // inconsistent with rank
  EXPECT_FALSE(v.shape_known());
}

TEST(Node, AttributesAndDescribe) {
  Node n;
  n.name = "conv1";
  n.op_type = "Conv";
  Attribute group;
  group.name = "group";
  group.type = ONYX_ATTR_INT;
  group.i = 4;
  Attribute pads;
  pads.name = "pads";
  pads.type = ONYX_ATTR_INTS;
  pads.ints = {1, 1};
  n.attributes = {group, pads};
  ASSERT_NE(n.attr("pads"), nullptr);
  EXPECT_EQ(n.attr("pads")->ints, std::vector<int64_t>({1, 1}));
  EXPECT_EQ(n.attr("strides"), nullptr);
  EXPECT_EQ(n.attr_int("group", 1), 4);
  EXPECT_EQ(n.attr_int("missing", 7), 7);
  EXPECT_EQ(n.attr_int("pads", 7), 7);  // not an INT attribute
  EXPECT_EQ(n.describe(), "Conv 'conv1'");
}

TEST(Graph, OpsetsFindAndAdd) {
  Graph g;
  g.opsets = {{"", 17}, {"com.example", 2}};
  EXPECT_EQ(g.opset(""), 17);
  EXPECT_EQ(g.opset("ai.onnx"), 17);
  EXPECT_EQ(g.opset("com.example"), 2);
  EXPECT_EQ(g.opset("ai.onnx.ml"), 0);
  Value a;
  a.name = "a";
  EXPECT_EQ(g.add_value(a), 0);
  a.name = "b";
  EXPECT_EQ(g.add_value(a), 1);
  EXPECT_EQ(g.find_value("b"), 1);
  EXPECT_EQ(g.find_value("c"), -1);
}

TEST(Graph, TopologicalOrderSortsAndKeepsFileOrderWhenSorted) {
  HandGraph h;
  h.node("c", {"y"}, {"z"});
  h.node("a", {"x"}, {"y"});
  h.node("b", {"x"}, {"w"});
  // Ready nodes go smallest index first: a (1) frees c (0), which precedes b (2).
  EXPECT_EQ(h.order(), std::vector<std::string>({"a", "c", "b"}));
  HandGraph sorted;
  sorted.node("a", {"x"}, {"y"});
  sorted.node("b", {"x"}, {"w"});
  sorted.node("c", {"y", "w"}, {"z"});
  EXPECT_EQ(sorted.order(), std::vector<std::string>({"a", "b", "c"}));
}

TEST(Graph, TopologicalOrderNamesANodeOnTheCycle) {
  // d consumes the cycle's output but is not on it: the error must not name it.
  HandGraph h;
  h.node("d", {"q"}, {"out"});
  h.node("p", {"x", "r"}, {"q"});
  h.node("r_node", {"q"}, {"r"});
  auto o = h.g.topological_order();
  ASSERT_FALSE(o.ok());
  const std::string msg = o.status().message();
  EXPECT_EQ(o.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
  EXPECT_TRUE(msg.find("'p'") != std::string::npos || msg.find("'r_node'") != std::string::npos) << msg;
  EXPECT_EQ(msg.find("Op 'd'"), std::string::npos) << msg;
}

TEST(Graph, TopologicalOrderSelfLoop) {
  HandGraph h;
  h.node("loop", {"a"}, {"a"});
  auto o = h.g.topological_order();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("'loop'"), std::string::npos) << o.status().message();
}

TEST(Graph, TopologicalOrderRefusesTwoProducers) {
  HandGraph h;
  h.node("a", {"x"}, {"y"});
  h.node("b", {"x"}, {"y"});
  auto o = h.g.topological_order();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("produced by both"), std::string::npos) << o.status().message();
}

TEST(Graph, SubgraphCapturesAreDependencies) {
  // The If node comes first in the file, but its branch reads 'late', which
  // a later node produces: it must be ordered after that node.
  GraphBuilder then_b("then");
  then_b.node("Identity", {"late"}, {"t_out"}).output("t_out");
  GraphBuilder else_b("else");
  else_b.node("Identity", {"x"}, {"e_out"}).output("e_out");
  GraphBuilder main("main");
  main.input("x", 1, {2}).input("c", 9, {})
      .node("If", {"c"}, {"y"}, {attr_graph("then_branch", then_b.proto()), attr_graph("else_branch", else_b.proto())}, "if")
      .node("Neg", {"x"}, {"late"}, {}, "producer")
      .output("y");
  auto m = import(make_model(main.proto()), "", false);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  auto o = m->graph->topological_order();
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  std::vector<std::string> names;
  for (int n : *o) names.push_back(m->graph->nodes[size_t(n)].name);
  EXPECT_EQ(names, std::vector<std::string>({"producer", "if"}));
}

TEST(Graph, LinkProducers) {
  HandGraph h;
  h.node("a", {"x"}, {"y"});
  h.node("b", {"y"}, {"z"});
  for (Value& v : h.g.values) v.producer = 42;  // stale
  h.g.link_producers();
  EXPECT_EQ(h.g.values[size_t(h.g.find_value("x"))].producer, -1);
  EXPECT_EQ(h.g.values[size_t(h.g.find_value("y"))].producer, 0);
  EXPECT_EQ(h.g.values[size_t(h.g.find_value("z"))].producer, 1);
}

}  // namespace
}  // namespace onyx::runtime::ir
