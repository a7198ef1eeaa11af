// ONNX import: model structure, names, attributes, subgraphs, and errors.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "ir/onnx_import.h"
#include "ir_test_util.h"

namespace onyx::runtime::ir {
namespace {

using namespace testing;

::testing::AssertionResult fails_with(const StatusOr<Model>& m, const std::string& needle) {
  if (m.ok()) return ::testing::AssertionFailure() << "import succeeded";
  if (m.status().message().find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "message '" << m.status().to_string() << "' lacks '" << needle << "'";
  return ::testing::AssertionSuccess();
}

TEST(Import, ModelGraphAndOpsets) {
  GraphBuilder g("main");
  g.input("x", 1, {-1, 4})
      .node("Relu", {"x"}, {"h"})
      .node("Neg", {"h"}, {"y"}, {}, "neg")
      .value_info("h", 1, {-1, 4})
      .output("y", 1, {-1, 4}, true);
  pb::ModelProto proto = make_model(g.proto(), 13);
  proto.mutable_opset_import(0)->set_domain("ai.onnx");
  auto* ml = proto.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  proto.set_producer_version("1.2");
  proto.set_doc_string("doc");
  auto* meta = proto.add_metadata_props();
  meta->set_key("author");
  meta->set_value("me");
  auto m = import(proto);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->ir_version, 8);
  EXPECT_EQ(m->producer_name, "onyx-ir-tests");
  EXPECT_EQ(m->producer_version, "1.2");
  EXPECT_EQ(m->doc, "doc");
  EXPECT_EQ(m->metadata.at("author"), "me");
  EXPECT_EQ(m->base_dir, "");
  const Graph& graph = *m->graph;
  EXPECT_EQ(graph.name, "main");
  EXPECT_EQ(graph.opset(""), 13);  // "ai.onnx" normalised
  EXPECT_EQ(graph.opset("ai.onnx.ml"), 3);
  ASSERT_EQ(graph.inputs.size(), 1u);
  ASSERT_EQ(graph.outputs.size(), 1u);
  const Value& x = graph.values[size_t(graph.inputs[0])];
  EXPECT_EQ(x.name, "x");
  EXPECT_TRUE(x.is_graph_input);
  EXPECT_EQ(x.dtype, ONYX_DTYPE_FLOAT32);
  EXPECT_EQ(x.dims, Shape({-1, 4}));  // a symbolic dim is unknown
  const Value& y = graph.values[size_t(graph.outputs[0])];
  EXPECT_TRUE(y.is_graph_output);
  EXPECT_EQ(y.producer, 1);
  ASSERT_EQ(graph.nodes.size(), 2u);
  EXPECT_EQ(graph.nodes[0].name, "Relu_0");  // synthesized
  EXPECT_EQ(graph.nodes[1].name, "neg");
  EXPECT_EQ(graph.nodes[0].inputs, std::vector<int>({graph.inputs[0]}));
}

TEST(Import, SynthesizedNamesAvoidExplicitOnes) {
  GraphBuilder g;
  g.input("x", 1, {2}).node("Relu", {"x"}, {"a"}, {}, "Relu_1").node("Relu", {"a"}, {"b"}).output("b");
  auto m = import(make_model(g.proto()));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->graph->nodes[0].name, "Relu_1");
  EXPECT_NE(m->graph->nodes[1].name, "Relu_1");
  EXPECT_EQ(m->graph->nodes[1].name.rfind("Relu_1", 0), 0u);
}

TEST(Import, InitializersAndOverridableDefaults) {
  // 'w' is a plain initializer; 'bias' is also a graph input (old IR style):
  // an input whose initializer is a default the caller may override.
  GraphBuilder g;
  g.input("x", 1, {2}).input("bias", 1, {-1})
      .initializer(float_tensor("w", {2}, {1, 2}))
      .initializer(float_tensor("bias", {2}, {0.5f, 0.25f}))
      .node("Mul", {"x", "w"}, {"t"})
      .node("Add", {"t", "bias"}, {"y"})
      .output("y");
  auto m = import(make_model(g.proto()));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const Graph& graph = *m->graph;
  ASSERT_EQ(graph.inputs.size(), 2u);
  const Value* w = find(*m, "w");
  const Value* bias = find(*m, "bias");
  ASSERT_TRUE(w && bias);
  EXPECT_FALSE(w->is_graph_input);
  ASSERT_TRUE(w->constant.has_value());
  EXPECT_EQ(w->constant->data_as<float>()[1], 2.0f);
  EXPECT_EQ(w->dims, Shape({2}));
  EXPECT_TRUE(bias->is_graph_input);
  ASSERT_TRUE(bias->constant.has_value());
  EXPECT_EQ(bias->constant->data_as<float>()[0], 0.5f);
  EXPECT_EQ(bias->dims, Shape({-1}));  // the declared type is the contract
  EXPECT_EQ(graph.values[size_t(graph.inputs[1])].name, "bias");
  // Shape inference does not treat the default as a constant.
  EXPECT_EQ(find(*m, "y")->dims, Shape({2}));
}

TEST(Import, OmittedOptionalInputsAndOutputs) {
  GraphBuilder g;
  g.input("x", 1, {2, 3})
      .initializer(float_tensor("hi", {}, {6}))
      .node("Clip", {"x", "", "hi"}, {"y"})
      .node("Dropout", {"y"}, {"z", ""})
      .output("z");
  auto m = import(make_model(g.proto()));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->graph->nodes[0].inputs[1], kNoValue);
  EXPECT_EQ(m->graph->nodes[1].outputs[1], kNoValue);
}

TEST(Import, AttributesOfEveryType) {
  GraphBuilder sub("sub");
  sub.input("s_in", 1, {1}).node("Identity", {"s_in"}, {"s_out"}).output("s_out");
  pb::AttributeProto tensors;
  tensors.set_name("tensors");
  tensors.set_type(pb::AttributeProto::TENSORS);
  *tensors.add_tensors() = int64_tensor("", {2}, {4, 5});
  *tensors.add_tensors() = float_tensor("", {1}, {1.5f});
  pb::AttributeProto graphs;
  graphs.set_name("graphs");
  graphs.set_type(pb::AttributeProto::GRAPHS);
  *graphs.add_graphs() = sub.proto();
  *graphs.add_graphs() = sub.proto();
  pb::AttributeProto strings;
  strings.set_name("strings");
  strings.set_type(pb::AttributeProto::STRINGS);
  strings.add_strings("a");
  strings.add_strings("bc");
  pb::AttributeProto sparse;
  sparse.set_name("sparse");
  sparse.set_type(pb::AttributeProto::SPARSE_TENSOR);
  *sparse.mutable_sparse_tensor()->mutable_values() = float_tensor("sv", {1}, {9});
  *sparse.mutable_sparse_tensor()->mutable_indices() = int64_tensor("", {1}, {2});
  sparse.mutable_sparse_tensor()->add_dims(4);
  pb::AttributeProto type_proto;
  type_proto.set_name("type");
  type_proto.set_type(pb::AttributeProto::TYPE_PROTO);
  type_proto.mutable_tp()->mutable_tensor_type()->set_elem_type(7);
  pb::AttributeProto untyped;  // old models leave AttributeProto.type unset
  untyped.set_name("untyped");
  untyped.set_i(3);
  GraphBuilder g;
  g.input("x", 1, {1})
      .node("Anything", {"x"}, {"y"},
            {attr_float("f", 0.5f), attr_int("i", -2), attr_string("s", "hey"), attr_floats("fs", {1, 2}),
             attr_ints("is", {3, 4}), strings, attr_tensor("t", int64_tensor("", {1}, {8})),
             attr_graph("g", sub.proto()), tensors, graphs, sparse, type_proto, untyped},
            "any", "com.example")
      .output("y");
  pb::ModelProto proto = make_model(g.proto());
  auto* dom = proto.add_opset_import();
  dom->set_domain("com.example");
  dom->set_version(1);
  auto m = import(proto);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const Node& n = m->graph->nodes[0];
  EXPECT_EQ(n.domain, "com.example");
  EXPECT_EQ(n.attr("f")->type, ONYX_ATTR_FLOAT);
  EXPECT_EQ(n.attr("f")->f, 0.5f);
  EXPECT_EQ(n.attr_int("i", 0), -2);
  EXPECT_EQ(n.attr("s")->s, "hey");
  EXPECT_EQ(n.attr("fs")->floats, std::vector<float>({1, 2}));
  EXPECT_EQ(n.attr("is")->ints, std::vector<int64_t>({3, 4}));
  EXPECT_EQ(n.attr("strings")->strings, std::vector<std::string>({"a", "bc"}));
  EXPECT_EQ(n.attr("t")->t.data_as<int64_t>()[0], 8);
  ASSERT_TRUE(n.attr("g")->g);
  EXPECT_EQ(n.attr("g")->g->nodes[0].op_type, "Identity");
  EXPECT_EQ(n.attr("g")->g->opsets, m->graph->opsets);
  ASSERT_EQ(n.attr("tensors")->tensors.size(), 2u);
  EXPECT_EQ(n.attr("tensors")->type, 9);
  EXPECT_EQ(n.attr("tensors")->tensors[0].data_as<int64_t>()[1], 5);
  EXPECT_EQ(n.attr("graphs")->type, 10);
  EXPECT_EQ(n.attr("graphs")->graphs.size(), 2u);
  // Sparse tensors are densified.
  EXPECT_EQ(n.attr("sparse")->type, ONYX_ATTR_TENSOR);
  ASSERT_EQ(n.attr("sparse")->t.shape(), Shape({4}));
  const float* dense = n.attr("sparse")->t.data_as<float>();
  EXPECT_EQ(std::vector<float>(dense, dense + 4), std::vector<float>({0, 0, 9, 0}));
  pb::TypeProto tp;
  ASSERT_TRUE(tp.ParseFromString(n.attr("type")->s));
  EXPECT_EQ(tp.tensor_type().elem_type(), 7);
  EXPECT_EQ(n.attr("untyped")->type, ONYX_ATTR_INT);
  EXPECT_EQ(n.attr("untyped")->i, 3);
  // An unknown domain's op leaves its output unknown, without error.
  EXPECT_EQ(find(*m, "y")->rank, -1);
}

TEST(Import, SubgraphsRecordOuterReferences) {
  // Loop body uses 'scale' (top level) directly and, in a nested If branch,
  // 'offset' (top level) and 'v_in' (the body's own input).
  GraphBuilder then_b("then");
  then_b.node("Add", {"v_in", "offset"}, {"t"}).output("t");
  GraphBuilder else_b("else");
  else_b.output("v_in");  // returns an enclosing value directly
  GraphBuilder body("body");
  body.input("i", 7, {}).input("cond", 9, {}).input("v_in", 1, {2})
      .node("Mul", {"v_in", "scale"}, {"scaled"})
      .node("If", {"cond"}, {"v_out"}, {attr_graph("then_branch", then_b.proto()), attr_graph("else_branch", else_b.proto())})
      .node("Identity", {"cond"}, {"cond_out"})
      .output("cond_out").output("v_out").output("scaled");
  GraphBuilder g("main");
  g.input("n", 7, {}).input("c", 9, {}).input("v", 1, {2})
      .initializer(float_tensor("scale", {2}, {2, 3}))
      .initializer(float_tensor("offset", {2}, {1, 1}))
      .node("Loop", {"n", "c", "v"}, {"v_final", "scans"}, {attr_graph("body", body.proto())})
      .output("v_final").output("scans");
  auto m = import(make_model(g.proto()));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE(m->graph->outer_refs.empty());
  const Graph& loop_body = *m->graph->nodes[0].attr("body")->g;
  std::vector<std::string> refs;
  for (int r : loop_body.outer_refs) {
    const Value& v = loop_body.values[size_t(r)];
    EXPECT_EQ(v.producer, -1);
    EXPECT_FALSE(v.is_graph_input);
    EXPECT_FALSE(v.constant.has_value());
    refs.push_back(v.name);
  }
  std::sort(refs.begin(), refs.end());
  EXPECT_EQ(refs, std::vector<std::string>({"offset", "scale"}));  // 'offset' passed up from the If
  const Graph& then_g = *loop_body.nodes[1].attr("then_branch")->g;
  std::vector<std::string> then_refs;
  for (int r : then_g.outer_refs) then_refs.push_back(then_g.values[size_t(r)].name);
  std::sort(then_refs.begin(), then_refs.end());
  EXPECT_EQ(then_refs, std::vector<std::string>({"offset", "v_in"}));
  // Loop outputs: the carried value keeps its type, scans gain a leading dim.
  EXPECT_EQ(find(*m, "v_final")->dtype, ONYX_DTYPE_FLOAT32);
  EXPECT_EQ(find(*m, "scans")->rank, 2);
  EXPECT_EQ(find(*m, "scans")->dims[1], 2);
}

TEST(Import, IfOutputsFromBranches) {
  GraphBuilder then_b("then");
  then_b.node("Neg", {"x"}, {"t"}).output("t");
  GraphBuilder else_b("else");
  else_b.node("Concat", {"x", "x"}, {"e"}, {attr_int("axis", 1)}).output("e");
  GraphBuilder g;
  g.input("x", 1, {2, 3}).input("c", 9, {})
      .node("If", {"c"}, {"y"}, {attr_graph("then_branch", then_b.proto()), attr_graph("else_branch", else_b.proto())})
      .output("y");
  auto m = import(make_model(g.proto()));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(find(*m, "y")->dtype, ONYX_DTYPE_FLOAT32);
  EXPECT_EQ(find(*m, "y")->dims, Shape({2, -1}));  // [2, 3] or [2, 6]
  // With a constant condition only the taken branch counts.
  g.proto().mutable_input()->RemoveLast();
  pb::TensorProto cond;
  cond.set_name("c");
  cond.set_data_type(pb::TensorProto::BOOL);
  cond.add_int32_data(0);
  g.initializer(cond);
  m = import(make_model(g.proto()));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(find(*m, "y")->dims, Shape({2, 6}));
}

TEST(Import, RejectsMalformedGraphs) {
  {
    GraphBuilder g;
    g.input("x", 1, {2}).node("Add", {"x", "nope"}, {"y"}, {}, "add").output("y");
    auto m = import(make_model(g.proto()));
    EXPECT_TRUE(fails_with(m, "Add 'add' input 1 uses 'nope'"));
    EXPECT_EQ(m.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  }
  {
    GraphBuilder g;
    g.input("x", 1, {2}).node("Relu", {"x"}, {"y"}, {}, "first").node("Neg", {"x"}, {"y"}, {}, "second").output("y");
    EXPECT_TRUE(fails_with(import(make_model(g.proto())), "Neg 'second' output 'y' is already produced by node Relu 'first'"));
  }
  {
    GraphBuilder g;
    g.input("x", 1, {2}).node("Relu", {"x"}, {"x"}, {}, "r").output("x");
    EXPECT_TRUE(fails_with(import(make_model(g.proto())), "output 'x' is already produced by a graph input"));
  }
  {
    GraphBuilder g;
    g.input("x", 1, {2}).node("", {"x"}, {"y"}, {}, "nameless_op").output("y");
    EXPECT_TRUE(fails_with(import(make_model(g.proto())), "node #0 'nameless_op' has no op_type"));
  }
  {
    GraphBuilder g;
    g.input("x", 1, {2}).initializer(float_tensor("w", {1}, {1})).initializer(float_tensor("w", {1}, {2}))
        .node("Add", {"x", "w"}, {"y"}).output("y");
    EXPECT_TRUE(fails_with(import(make_model(g.proto())), "initializer 'w' is defined twice"));
  }
  {
    GraphBuilder g;
    g.input("x", 1, {2}).input("x", 1, {2}).node("Relu", {"x"}, {"y"}).output("y");
    EXPECT_TRUE(fails_with(import(make_model(g.proto())), "graph input 'x' is listed twice"));
  }
  {
    GraphBuilder g;
    g.input("x", 1, {2}).node("Relu", {"x"}, {"y"}).output("y").output("ghost");
    EXPECT_TRUE(fails_with(import(make_model(g.proto())), "'ghost'"));
  }
  {  // a subgraph may use enclosing names, but only ones that exist
    GraphBuilder then_b("then");
    then_b.node("Identity", {"undefined_anywhere"}, {"t"}).output("t");
    GraphBuilder g;
    g.input("c", 9, {}).node("If", {"c"}, {"y"}, {attr_graph("then_branch", then_b.proto()),
                                                  attr_graph("else_branch", then_b.proto())}, "if").output("y");
    EXPECT_TRUE(fails_with(import(make_model(g.proto())), "'undefined_anywhere'"));
  }
  {
    GraphBuilder g;
    g.input("x", 1, {2}).node("Relu", {"x"}, {"y"}).output("y");
    pb::ModelProto proto = make_model(g.proto());
    auto* again = proto.add_opset_import();
    again->set_domain("ai.onnx");
    again->set_version(11);
    EXPECT_TRUE(fails_with(import(proto), "imports opset domain 'ai.onnx' twice"));
  }
  {
    pb::AttributeProto ref;
    ref.set_name("alpha");
    ref.set_ref_attr_name("outer_alpha");
    GraphBuilder g;
    g.input("x", 1, {2}).node("LeakyRelu", {"x"}, {"y"}, {ref}).output("y");
    EXPECT_TRUE(fails_with(import(make_model(g.proto())), "refers to function attribute 'outer_alpha'"));
  }
  {
    pb::ModelProto proto;
    proto.set_ir_version(8);
    EXPECT_TRUE(fails_with(import(proto), "has no graph"));
  }
}

// Input and output counts against the op's ONNX schema (the model_run
// fuzzer sent a one-input MatMul to MatMul's kernel, which read input 1).
TEST(Import, NodesWithTheWrongNumberOfInputsOrOutputsAreRefused) {
  auto one = [](const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                int64_t opset = 17) {
    GraphBuilder g;
    g.input("x", 1, {2, 2}).input("w", 1, {1, 2, 1, 1}).input("axes", 7, {1}).node(op, in, out, {}, "n0");
    for (const std::string& o : out)
      if (!o.empty()) g.output(o);
    return import(make_model(g.proto(), opset));
  };
  auto m = one("MatMul", {"x"}, {"y"});
  EXPECT_TRUE(fails_with(m, "graph 'g': node MatMul 'n0' (MatMul-13) has 1 input; the ONNX schema takes 2"));
  EXPECT_EQ(m.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(fails_with(one("Relu", {"x", "x"}, {"y"}), "Relu 'n0' (Relu-14) has 2 inputs; the ONNX schema takes 1"));
  EXPECT_TRUE(fails_with(one("Gemm", {"x"}, {"y"}), "(Gemm-13) has 1 input; the ONNX schema takes 2 to 3"));
  EXPECT_TRUE(fails_with(one("Relu", {"x"}, {}), "(Relu-14) has 0 outputs; the ONNX schema gives 1"));
  EXPECT_TRUE(fails_with(one("Concat", {}, {"y"}), "has 0 inputs; the ONNX schema takes at least 1"));
  EXPECT_TRUE(fails_with(one("Conv", {"x", ""}, {"y"}), "(Conv-11) leaves required input 1 ('W') empty"));
  // Omitted optional inputs and outputs are fine, as are variadic counts.
  EXPECT_TRUE(one("Conv", {"w", "w", ""}, {"y"}).ok());
  EXPECT_TRUE(one("Dropout", {"x"}, {"y", ""}).ok());
  EXPECT_TRUE(one("Sum", {"x", "x", "x", "x"}, {"y"}).ok());
  // An opset newer than onnx 1.12's schemas is not judged by an older
  // version: ReduceMean-18 takes its axes as a second input.
  auto newer = one("ReduceMean", {"x", "axes"}, {"y"}, 18);
  EXPECT_TRUE(newer.ok()) << newer.status().to_string();
  // Ops the schemas do not know are left to partitioning, which names them.
  EXPECT_TRUE(one("NoSuchOp", {"x"}, {"y"}).ok());
}

TEST(Import, TruncatedAndGarbageProtobuf) {
  GraphBuilder g;
  g.input("x", 1, {2}).initializer(float_tensor("w", {4}, {1, 2, 3, 4}))
      .node("Add", {"x", "x"}, {"y"}).output("y");
  const std::string bytes = make_model(g.proto()).SerializeAsString();
  auto truncated = load_model_from_bytes(bytes.data(), bytes.size() - 7, "");
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(truncated.status().message().find("is not a valid ONNX model (protobuf parse failed)"),
            std::string::npos) << truncated.status().message();
  const std::string garbage = "\xff\xff\xff\xff this is not protobuf \x01\x02";
  auto bad = load_model_from_bytes(garbage.data(), garbage.size(), "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("is not a valid ONNX model"), std::string::npos) << bad.status().message();
  auto empty = load_model_from_bytes(nullptr, 0, "");
  EXPECT_FALSE(empty.ok());
  auto missing = load_model("/nonexistent/folder/model.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ONYX_STATUS_NOT_FOUND);
}

// The loader reads like the checkpoint reader (util::read_regular_file): one
// open with O_NONBLOCK, then fstat of that descriptor. A FIFO as the model
// path was opened with ifstream, which waits forever for a writer.
TEST(Import, AModelPathThatIsAFifoIsRefusedWithoutBlocking) {
  const std::filesystem::path fifo =
      std::filesystem::temp_directory_path() / ("onyx_import_fifo_" + std::to_string(::getpid()) + ".onnx");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto m = load_model(fifo.string());
  std::filesystem::remove(fifo);
  EXPECT_EQ(m.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(fails_with(m, "is not a regular file"));
  EXPECT_TRUE(fails_with(m, fifo.filename().string()));
}

TEST(Import, CorruptedBytesNeverCrash) {
  // Truncations and byte flips of a model with a subgraph, initializers and
  // attributes: every import returns, successfully or with an error.
  GraphBuilder then_b("then");
  then_b.node("Add", {"x", "w"}, {"t"}).output("t");
  GraphBuilder g;
  g.input("x", 1, {2, 3}).input("c", 9, {})
      .initializer(float_tensor("w", {3}, {1, 2, 3}))
      .initializer(int64_tensor("shape", {2}, {3, 2}))
      .node("If", {"c"}, {"y"}, {attr_graph("then_branch", then_b.proto()), attr_graph("else_branch", then_b.proto())})
      .node("Reshape", {"y", "shape"}, {"z"})
      .node("Transpose", {"z"}, {"q"}, {attr_ints("perm", {1, 0}), attr_string("note", "unused")})
      .initializer(int64_tensor("zero", {}, {0}))
      .initializer(int64_tensor("one", {1}, {1}))
      .initializer(int64_tensor("three", {}, {3}))
      .node("Shape", {"q"}, {"qs"})
      .node("Gather", {"qs", "zero"}, {"q0"}, {attr_int("axis", 0)})
      .node("Range", {"zero", "three", "q0"}, {"r"})
      .node("Slice", {"r", "zero", "three"}, {"rs"})
      .node("Concat", {"qs", "one"}, {"target"}, {attr_int("axis", 0)})
      .node("Reshape", {"q", "target"}, {"q3"})
      .node("Div", {"qs", "one"}, {"qd"})
      .node("Where", {"c", "qd", "qs"}, {"qw"})
      .output("q").output("rs").output("q3").output("qw");
  const std::string bytes = make_model(g.proto()).SerializeAsString();
  ASSERT_TRUE(load_model_from_bytes(bytes.data(), bytes.size(), "").ok());
  int failures = 0, successes = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto m = load_model_from_bytes(bytes.data(), len, "");
    m.ok() ? ++successes : ++failures;
  }
  uint32_t seed = 12345;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string corrupt = bytes;
    for (int flips = 0; flips < 3; ++flips) {
      seed = seed * 1664525u + 1013904223u;  // a fixed LCG: reproducible
      corrupt[(seed >> 8) % corrupt.size()] = char(seed >> 24);
    }
    auto m = load_model_from_bytes(corrupt.data(), corrupt.size(), "");
    m.ok() ? ++successes : ++failures;
  }
  EXPECT_GT(failures, 0);
  EXPECT_GT(successes, 0);
}

TEST(Import, ModelLargerThan64MiB) {
  // protobuf's historical 64 MiB default limit must not apply.
  const int64_t count = (70 << 20) / 4;
  pb::TensorProto big;
  big.set_name("big");
  big.set_data_type(pb::TensorProto::FLOAT);
  big.add_dims(count);
  std::string raw(size_t(count) * 4, '\0');
  const float last = 3.5f;
  std::memcpy(raw.data() + raw.size() - 4, &last, 4);
  big.set_raw_data(std::move(raw));
  GraphBuilder g;
  g.input("x", 1, {count}).initializer(big).node("Add", {"x", "big"}, {"y"}).output("y");
  auto m = import(make_model(g.proto()));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(find(*m, "big")->constant->data_as<float>()[count - 1], 3.5f);
  EXPECT_EQ(find(*m, "y")->dims, Shape({count}));
}

}  // namespace
}  // namespace onyx::runtime::ir
