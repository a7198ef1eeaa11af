// model_parse_test.cpp: parse_model_proto leaves the top-level initializers'
// raw_data in the caller's bytes and otherwise parses exactly as protobuf does.
#include <gtest/gtest.h>
#include <onyx/util/model_parse.h>

#include <string>

namespace onyx::util {
namespace {

using ONNX_NAMESPACE::ModelProto;
using ONNX_NAMESPACE::TensorProto;

ModelProto sample_model() {
  ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("model_parse_test");
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("main");
  TensorProto* raw = g->add_initializer();
  raw->set_name("raw");
  raw->set_data_type(TensorProto::FLOAT);
  raw->add_dims(3);
  raw->set_raw_data(std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40", 12));
  TensorProto* typed = g->add_initializer();
  typed->set_name("typed");
  typed->set_data_type(TensorProto::FLOAT);
  typed->add_dims(2);
  typed->add_float_data(1.5f);
  typed->add_float_data(-2.f);
  TensorProto* empty = g->add_initializer();
  empty->set_name("empty");
  empty->set_data_type(TensorProto::FLOAT);
  empty->add_dims(0);
  empty->set_raw_data("");
  auto* node = g->add_node();
  node->set_op_type("If");
  node->add_input("cond");
  node->add_output("y");
  auto* attr = node->add_attribute();
  attr->set_name("then_branch");
  attr->set_type(ONNX_NAMESPACE::AttributeProto::GRAPH);
  TensorProto* nested = attr->mutable_g()->add_initializer();  // subgraphs keep their bytes
  nested->set_name("nested");
  nested->set_data_type(TensorProto::INT8);
  nested->add_dims(2);
  nested->set_raw_data("ab");
  return m;
}

TEST(ModelParse, TopLevelRawDataStaysInTheBytesAndTheRestParsesAsProtobufDoes) {
  const ModelProto original = sample_model();
  const std::string bytes = original.SerializeAsString();
  ModelProto parsed;
  std::vector<std::string_view> raw;
  ASSERT_TRUE(parse_model_proto(bytes, parsed, raw));
  ASSERT_EQ(raw.size(), 3u);
  EXPECT_EQ(raw[0], original.graph().initializer(0).raw_data());
  EXPECT_GE(raw[0].data(), bytes.data());  // a view of the caller's bytes, not a copy
  EXPECT_LE(raw[0].data() + raw[0].size(), bytes.data() + bytes.size());
  EXPECT_EQ(raw[1].data(), nullptr);  // typed data: no raw_data
  ASSERT_NE(raw[2].data(), nullptr);  // raw_data present and empty
  EXPECT_TRUE(raw[2].empty());
  EXPECT_TRUE(parsed.graph().initializer(0).has_raw_data());
  EXPECT_TRUE(parsed.graph().initializer(0).raw_data().empty());
  EXPECT_FALSE(parsed.graph().initializer(1).has_raw_data());

  // Put the payloads back: the result is the original model, field for field.
  parsed.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(raw[0]));
  EXPECT_EQ(parsed.SerializeAsString(), bytes);
  EXPECT_EQ(parsed.graph().node(0).attribute(0).g().initializer(0).raw_data(), "ab");
}

TEST(ModelParse, ARepeatedGraphFieldIsMergedByProtobufNotSplit) {
  ModelProto first = sample_model(), second;
  second.mutable_graph()->add_initializer()->set_name("second");
  const std::string bytes = first.SerializeAsString() + second.SerializeAsString();
  ModelProto expected;
  ASSERT_TRUE(expected.ParseFromString(bytes));
  ModelProto parsed;
  std::vector<std::string_view> raw;
  ASSERT_TRUE(parse_model_proto(bytes, parsed, raw));
  EXPECT_TRUE(raw.empty());
  EXPECT_EQ(parsed.SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(parsed.graph().initializer_size(), 4);
}

TEST(ModelParse, EveryTruncationIsRefusedOrParsesLikeProtobuf) {
  const std::string bytes = sample_model().SerializeAsString();
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string cut = bytes.substr(0, n);
    ModelProto expected, parsed;
    std::vector<std::string_view> raw;
    const bool protobuf_ok = expected.ParseFromString(cut);
    ASSERT_EQ(parse_model_proto(cut, parsed, raw), protobuf_ok) << "at " << n << " bytes";
    if (!protobuf_ok) continue;
    for (size_t k = 0; k < raw.size(); ++k)
      if (raw[k].data()) parsed.mutable_graph()->mutable_initializer(int(k))->set_raw_data(std::string(raw[k]));
    EXPECT_EQ(parsed.SerializeAsString(), expected.SerializeAsString()) << "at " << n << " bytes";
  }
}

TEST(ModelParse, GarbageIsRefused) {
  ModelProto parsed;
  std::vector<std::string_view> raw;
  EXPECT_FALSE(parse_model_proto(std::string("\x3a\xff\xff\xff\xff\x0f", 6), parsed, raw));  // graph past the end
  EXPECT_FALSE(parse_model_proto(std::string("\x0b", 1), parsed, raw));                      // a group start
}

}  // namespace
}  // namespace onyx::util
