// Model-zoo-style classical ML and text pipelines end to end, through the C
// API (the C++ wrapper) and through `onyx run` with ONNX value files:
//   - a scikit-learn-style classifier: features -> linear model -> Softmax
//     -> ArgMax -> LabelEncoder (class names) and ZipMap (a map of class
//     probabilities per row, the output scikit-learn converters write);
//   - a text classifier reading strings: StringNormalizer -> LabelEncoder
//     (vocabulary ids) -> Gather (embeddings) -> MatMul -> Softmax -> labels;
//   - maps in: DictVectorizer and CastMap, and a map whose key repeats.
// Expected values are computed here in float64, independently of Onyx.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <onnx/onnx-data_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <span>

#include "e2e_util.h"
#include "proto_builder.h"

namespace onyx::e2e {
namespace {

namespace fs = std::filesystem;
namespace tm = onyx::test_models;
using ::testing::HasSubstr;

const std::vector<std::string> kIrisClasses = {"setosa", "versicolor", "virginica"};

void set_strings(onnx::NodeProto& node, const std::string& name, const std::vector<std::string>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) a->add_strings(v);
}

void set_string(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

onnx::ValueInfoProto& declare(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name) {
  onnx::ValueInfoProto* v = list->Add();
  v->set_name(name);
  return *v;
}

void tensor_type(onnx::TypeProto* t, int elem, const std::vector<int64_t>& dims) {
  t->mutable_tensor_type()->set_elem_type(elem);
  auto* shape = t->mutable_tensor_type()->mutable_shape();
  for (int64_t d : dims) {
    if (d >= 0) shape->add_dim()->set_dim_value(d);
    else shape->add_dim()->set_dim_param("N");
  }
}

void map_type(onnx::TypeProto* t, int key, int value) {
  t->mutable_map_type()->set_key_type(key);
  t->mutable_map_type()->mutable_value_type()->mutable_tensor_type()->set_elem_type(value);
}

onnx::ModelProto with_ml_opset(onnx::ModelProto model) {
  auto* ml = model.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  return model;
}

// Weights of the classifier, and its float64 reference.
const std::vector<float> kW = {0.5f, -1.0f, 0.25f, 1.5f, 0.75f, -0.5f, -1.25f, 0.5f, 1.0f, 0.2f, -0.3f, 0.8f};
const std::vector<float> kB = {0.1f, -0.2f, 0.05f};

std::vector<double> class_probabilities(const std::vector<float>& x, int64_t row) {
  std::vector<double> z(3);
  for (int c = 0; c < 3; ++c) {
    z[size_t(c)] = kB[size_t(c)];
    for (int f = 0; f < 4; ++f) z[size_t(c)] += double(x[size_t(row * 4 + f)]) * kW[size_t(f * 3 + c)];
  }
  const double m = std::max({z[0], z[1], z[2]});
  double sum = 0;
  for (double& v : z) sum += (v = std::exp(v - m));
  for (double& v : z) v /= sum;
  return z;
}

onnx::ModelProto classifier_model() {
  onnx::ModelProto model = with_ml_opset(tm::new_model("iris_classifier"));
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "features", {std::string("N"), int64_t(4)});
  tm::add_initializer(g, "W", {4, 3}, kW);
  tm::add_initializer(g, "B", {3}, kB);
  tm::add_node(g, "MatMul", "linear", {"features", "W"}, {"z0"});
  tm::add_node(g, "Add", "bias", {"z0", "B"}, {"z"});
  tm::add_node(g, "Softmax", "softmax", {"z"}, {"probabilities"});
  tm::set_int(tm::add_node(g, "ArgMax", "argmax", {"probabilities"}, {"index"}), "axis", 1);
  tm::set_int(*g.mutable_node(g.node_size() - 1), "keepdims", 0);
  onnx::NodeProto& names = tm::add_node(g, "LabelEncoder", "class_names", {"index"}, {"label"});
  names.set_domain("ai.onnx.ml");
  tm::set_ints(names, "keys_int64s", {0, 1, 2});
  set_strings(names, "values_strings", kIrisClasses);
  onnx::NodeProto& zip = tm::add_node(g, "ZipMap", "zipmap", {"probabilities"}, {"output_probability"});
  zip.set_domain("ai.onnx.ml");
  set_strings(zip, "classlabels_strings", kIrisClasses);
  tensor_type(declare(g.mutable_output(), "label").mutable_type(), onnx::TensorProto::STRING, {-1});
  onnx::TypeProto* seq = declare(g.mutable_output(), "output_probability").mutable_type();
  map_type(seq->mutable_sequence_type()->mutable_elem_type(), onnx::TensorProto::STRING, onnx::TensorProto::FLOAT);
  return model;
}

const std::vector<float> kFeatures = {5.1f, 3.5f, 1.4f, 0.2f, 6.7f, 3.0f, 5.2f, 2.3f, 5.9f, 3.0f, 4.2f, 1.5f};

// Softmax of 3 logits that are 4-term float32 dot products: about 1e-7
// relative error each, so 1e-6 absolute on a probability is generous and far
// below any wrong result.
constexpr double kProbabilityTolerance = 1e-6;

void expect_classifier_outputs(const std::vector<std::string>& labels,
                               const std::vector<std::vector<std::pair<std::string, float>>>& maps) {
  ASSERT_EQ(labels.size(), 3u);
  ASSERT_EQ(maps.size(), 3u);
  for (int64_t row = 0; row < 3; ++row) {
    std::vector<double> p = class_probabilities(kFeatures, row);
    const size_t best = size_t(std::max_element(p.begin(), p.end()) - p.begin());
    EXPECT_EQ(labels[size_t(row)], kIrisClasses[best]) << "row " << row;
    ASSERT_EQ(maps[size_t(row)].size(), 3u);
    for (size_t c = 0; c < 3; ++c) {
      EXPECT_EQ(maps[size_t(row)][c].first, kIrisClasses[c]);
      EXPECT_NEAR(maps[size_t(row)][c].second, p[c], kProbabilityTolerance) << "row " << row << " class " << c;
    }
  }
}

std::vector<std::pair<std::string, float>> map_entries(const onyx::Value& map) {
  auto [keys, values] = map.map_columns();
  std::vector<std::pair<std::string, float>> out;
  for (int64_t k = 0; k < keys.size(); ++k) out.emplace_back(keys.string_at(k), values.data<float>()[k]);
  return out;
}

class MlPipeline : public ::testing::Test {
 protected:
  onyx::Session session(const onnx::ModelProto& model) {
    const std::string bytes = model.SerializeAsString();
    return onyx::Session(env_, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
  }
  fs::path save(const onnx::ModelProto& model, const std::string& name) {
    std::ofstream(dir_ / name, std::ios::binary) << model.SerializeAsString();
    return dir_ / name;
  }
  onyx::Env env_;
  TempDir dir_;
};

TEST_F(MlPipeline, ClassifierWithZipMapThroughTheCApi) {
  onyx::Session s = session(classifier_model());
  onyx::Tensor x = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {3, 4}, kFeatures);
  onyx::Value in = onyx::Value::tensor(x);
  std::vector<onyx::Value> out = s.run_values({{"features", &in}});
  ASSERT_EQ(out.size(), 2u);
  onyx::Tensor label = out[0].as_tensor();
  ASSERT_EQ(label.dtype(), ONYX_DTYPE_STRING);
  std::vector<std::string> labels;
  for (int64_t k = 0; k < label.size(); ++k) labels.push_back(label.string_at(k));
  ASSERT_EQ(out[1].kind(), ONYX_VALUE_SEQUENCE);
  std::vector<std::vector<std::pair<std::string, float>>> maps;
  for (size_t k = 0; k < out[1].count(); ++k) {
    ASSERT_EQ(out[1].item(k).kind(), ONYX_VALUE_MAP);
    maps.push_back(map_entries(out[1].item(k)));
  }
  expect_classifier_outputs(labels, maps);
  onyx::ValueMetadata declared = s.outputs()[1];
  EXPECT_EQ(declared.kind, ONYX_VALUE_SEQUENCE);
}

TEST_F(MlPipeline, ClassifierWithZipMapThroughOnyxRun) {
  const fs::path model = save(classifier_model(), "classifier.onnx");
  write_tensor_pb(dir_ / "features.pb", "features", {3, 4}, kFeatures);
  CliResult r = run_cli("run " + quote(model) + " --input features=" + quote(dir_ / "features.pb") + " --output-dir " +
                        quote(dir_ / "out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("output_probability  sequence of 3 maps: map(string, float32) of 3 entries: setosa"));
  onnx::TensorProto label;
  onnx::SequenceProto maps;
  ASSERT_TRUE(label.ParseFromString(read_file(dir_ / "out" / "label.pb")));
  ASSERT_TRUE(maps.ParseFromString(read_file(dir_ / "out" / "output_probability.pb")));
  ASSERT_EQ(maps.elem_type(), onnx::SequenceProto::MAP);
  std::vector<std::string> labels(label.string_data().begin(), label.string_data().end());
  std::vector<std::vector<std::pair<std::string, float>>> entries;
  for (const onnx::MapProto& m : maps.map_values()) {
    ASSERT_EQ(m.key_type(), onnx::TensorProto::STRING);
    ASSERT_EQ(m.values().tensor_values_size(), m.string_keys_size());
    auto& row = entries.emplace_back();
    for (int k = 0; k < m.string_keys_size(); ++k) {
      const onnx::TensorProto& v = m.values().tensor_values(k);
      float f = 0;
      if (v.has_raw_data()) std::memcpy(&f, v.raw_data().data(), sizeof f);
      else f = v.float_data(0);
      row.emplace_back(m.string_keys(k), f);
    }
  }
  expect_classifier_outputs(labels, entries);
}

// A sentiment classifier over words: lower-cased, looked up in a vocabulary
// (unknown words: id 0), embedded, scored by a linear layer.
onnx::ModelProto text_model() {
  onnx::ModelProto model = with_ml_opset(tm::new_model("text_classifier"));
  onnx::GraphProto& g = *model.mutable_graph();
  tensor_type(declare(g.mutable_input(), "text").mutable_type(), onnx::TensorProto::STRING, {-1});
  // Embeddings [4, 2] for <unk>, good, bad, fine; scores = embedding @ [[1, -1], [-1, 1]] (positive, negative).
  tm::add_initializer(g, "embedding", {4, 2}, {0, 0, 2, 0, 0, 2, 1, 0.5f});
  tm::add_initializer(g, "score", {2, 2}, {1, -1, -1, 1});
  onnx::NodeProto& lower = tm::add_node(g, "StringNormalizer", "lower", {"text"}, {"words"});
  set_string(lower, "case_change_action", "LOWER");
  onnx::NodeProto& vocab = tm::add_node(g, "LabelEncoder", "vocabulary", {"words"}, {"ids"});
  vocab.set_domain("ai.onnx.ml");
  set_strings(vocab, "keys_strings", {"good", "bad", "fine"});
  tm::set_ints(vocab, "values_int64s", {1, 2, 3});
  tm::set_int(vocab, "default_int64", 0);
  tm::add_node(g, "Gather", "embed", {"embedding", "ids"}, {"vectors"});
  tm::add_node(g, "MatMul", "linear", {"vectors", "score"}, {"logits"});
  tm::add_node(g, "Softmax", "softmax", {"logits"}, {"probabilities"});
  tm::set_int(tm::add_node(g, "ArgMax", "argmax", {"probabilities"}, {"index"}), "axis", 1);
  tm::set_int(*g.mutable_node(g.node_size() - 1), "keepdims", 0);
  onnx::NodeProto& names = tm::add_node(g, "LabelEncoder", "sentiment_names", {"index"}, {"sentiment"});
  names.set_domain("ai.onnx.ml");
  tm::set_ints(names, "keys_int64s", {0, 1});
  set_strings(names, "values_strings", {"positive", "negative"});
  tensor_type(declare(g.mutable_output(), "sentiment").mutable_type(), onnx::TensorProto::STRING, {-1});
  tensor_type(declare(g.mutable_output(), "probabilities").mutable_type(), onnx::TensorProto::FLOAT, {-1, 2});
  return model;
}

const std::vector<std::string> kWords = {"GOOD", "Bad", "weird", "fine"};
const std::vector<std::string> kSentiments = {"positive", "negative", "positive", "positive"};  // <unk> ties: class 0
// P(positive) per word: embeddings (2,0) (0,2) (0,0) (1,0.5) -> logits (e0-e1, e1-e0).
double positive_probability(size_t k) {
  const double e[4][2] = {{2, 0}, {0, 2}, {0, 0}, {1, 0.5}};
  const double d = 2 * (e[k][0] - e[k][1]);
  return 1 / (1 + std::exp(-d));
}

TEST_F(MlPipeline, TextClassifierReadsStringsThroughTheCApi) {
  onyx::Session s = session(text_model());
  onyx::Tensor text = onyx::Tensor::strings(kWords, {4});
  std::vector<onyx::Tensor> out = s.run({{"text", &text}});
  ASSERT_EQ(out.size(), 2u);
  for (int64_t k = 0; k < 4; ++k) {
    EXPECT_EQ(out[0].string_at(k), kSentiments[size_t(k)]) << kWords[size_t(k)];
    EXPECT_NEAR(out[1].data<float>()[k * 2], positive_probability(size_t(k)), kProbabilityTolerance);
  }
}

TEST_F(MlPipeline, TextClassifierReadsStringsThroughOnyxRun) {
  const fs::path model = save(text_model(), "text.onnx");
  onnx::TensorProto text;
  text.set_name("text");
  text.set_data_type(onnx::TensorProto::STRING);
  text.add_dims(4);
  for (const std::string& w : kWords) text.add_string_data(w);
  std::ofstream(dir_ / "text.pb", std::ios::binary) << text.SerializeAsString();
  CliResult r = run_cli("run " + quote(model) + " --input " + quote(dir_ / "text.pb") + " --output-dir " +
                        quote(dir_ / "out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("sentiment  string  [4]\n    first: [\"positive\", \"negative\", \"positive\""));
  onnx::TensorProto sentiment;
  ASSERT_TRUE(sentiment.ParseFromString(read_file(dir_ / "out" / "sentiment.pb")));
  ASSERT_EQ(sentiment.string_data_size(), 4);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(sentiment.string_data(k), kSentiments[size_t(k)]);
}

// map(string, float) -> DictVectorizer over [a, b, c, d]; map(int64, float)
// -> CastMap DENSE (key order) and SPARSE (by key, max_map 5).
onnx::ModelProto map_model() {
  onnx::ModelProto model = with_ml_opset(tm::new_model("maps"));
  onnx::GraphProto& g = *model.mutable_graph();
  map_type(declare(g.mutable_input(), "counts").mutable_type(), onnx::TensorProto::STRING, onnx::TensorProto::FLOAT);
  map_type(declare(g.mutable_input(), "slots").mutable_type(), onnx::TensorProto::INT64, onnx::TensorProto::FLOAT);
  onnx::NodeProto& dv = tm::add_node(g, "DictVectorizer", "vectorize", {"counts"}, {"vector"});
  dv.set_domain("ai.onnx.ml");
  set_strings(dv, "string_vocabulary", {"a", "b", "c", "d"});
  onnx::NodeProto& dense = tm::add_node(g, "CastMap", "dense", {"slots"}, {"dense"});
  dense.set_domain("ai.onnx.ml");
  onnx::NodeProto& sparse = tm::add_node(g, "CastMap", "sparse", {"slots"}, {"sparse"});
  sparse.set_domain("ai.onnx.ml");
  set_string(sparse, "map_form", "SPARSE");
  tm::set_int(sparse, "max_map", 5);
  for (const char* name : {"vector", "dense", "sparse"})
    tensor_type(declare(g.mutable_output(), name).mutable_type(), onnx::TensorProto::FLOAT, {1, -1});
  return model;
}

TEST_F(MlPipeline, DictVectorizerAndCastMapReadMaps) {
  onyx::Session s = session(map_model());
  onyx::Value counts = onyx::Value::map(onyx::Tensor::strings({"c", "a", "zz"}, {3}),
                                        onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {3}, std::vector<float>{3, 1, 9}));
  onyx::Value slots = onyx::Value::map(onyx::Tensor::from<int64_t>(ONYX_DTYPE_INT64, {2}, std::vector<int64_t>{3, 1}),
                                       onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {2}, std::vector<float>{30, 10}));
  std::vector<onyx::Value> out = s.run_values({{"counts", &counts}, {"slots", &slots}});
  auto floats = [](const onyx::Value& v) {
    onyx::Tensor t = v.as_tensor();
    return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
  };
  EXPECT_EQ(floats(out[0]), (std::vector<float>{1, 0, 3, 0}));  // "zz" is not in the vocabulary
  EXPECT_EQ(out[0].as_tensor().shape(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{10, 30}));
  EXPECT_EQ(floats(out[2]), (std::vector<float>{0, 10, 0, 30, 0}));
}

// Bad input: a key that repeats is refused where the map is made, naming it
// (C API), and in a MapProto file given to `onyx run` (the file and the key).
TEST_F(MlPipeline, AMapWithARepeatedKeyIsRefused) {
  try {
    onyx::Value::map(onyx::Tensor::strings({"a", "b", "a"}, {3}),
                     onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {3}, std::vector<float>{1, 2, 3}));
    FAIL() << "a map with a repeated key was made";
  } catch (const onyx::Error& e) {
    EXPECT_EQ(e.code(), ONYX_STATUS_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), HasSubstr("map key 'a' appears twice"));
  }
  onnx::MapProto map;
  map.set_name("slots");
  map.set_key_type(onnx::TensorProto::INT64);
  map.mutable_values()->set_elem_type(onnx::SequenceProto::TENSOR);
  for (int64_t key : {4, 2, 4}) {
    map.add_keys(key);
    onnx::TensorProto* v = map.mutable_values()->add_tensor_values();
    v->set_data_type(onnx::TensorProto::FLOAT);
    v->add_float_data(1.0f);
  }
  std::ofstream(dir_ / "slots.pb", std::ios::binary) << map.SerializeAsString();
  const fs::path model = save(map_model(), "maps.onnx");
  onnx::MapProto counts;
  counts.set_key_type(onnx::TensorProto::STRING);
  counts.mutable_values()->set_elem_type(onnx::SequenceProto::TENSOR);
  std::ofstream(dir_ / "counts.pb", std::ios::binary) << counts.SerializeAsString();
  CliResult r = run_cli("run " + quote(model) + " --input counts=" + quote(dir_ / "counts.pb") +
                        " --input slots=" + quote(dir_ / "slots.pb"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("slots.pb"));
  EXPECT_THAT(r.output, HasSubstr("map key 4 appears twice"));
  // The same files without the repeat run, and the outputs are written.
  map.set_keys(2, 0);
  std::ofstream(dir_ / "slots.pb", std::ios::binary | std::ios::trunc) << map.SerializeAsString();
  r = run_cli("run " + quote(model) + " --input counts=" + quote(dir_ / "counts.pb") + " --input slots=" +
              quote(dir_ / "slots.pb"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("input slots: map(int64, float32) of 3 entries"));
}

}  // namespace
}  // namespace onyx::e2e
