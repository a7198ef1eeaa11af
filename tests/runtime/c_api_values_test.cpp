// Sequences and optionals through the public C API (onyx_session_run_values,
// OnyxValue): a model end to end, and the bad inputs that must fail clearly
// (a sequence of mismatched element types, an absent optional where a value
// is required, a value of the wrong kind). Links libonyx only.
#include <gtest/gtest.h>

#include <onyx/onyx.hpp>

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model_builder.h"

namespace {

struct ValueDeleter {
  void operator()(OnyxValue* v) const { onyx_value_release(v); }
};
using ValuePtr = std::unique_ptr<OnyxValue, ValueDeleter>;
struct TensorDeleter {
  void operator()(OnyxTensor* t) const { onyx_tensor_release(t); }
};
using TensorPtr = std::unique_ptr<OnyxTensor, TensorDeleter>;

// The status's message, released; "" for success.
std::string message_of(OnyxStatus* status) {
  std::string m = status ? onyx_status_message(status) : "";
  onyx_status_release(status);
  return m;
}

ValuePtr tensor_value(int32_t dtype, std::vector<int64_t> dims, const void* data, size_t bytes) {
  OnyxTensor* t = nullptr;
  EXPECT_EQ(message_of(onyx_tensor_create(dtype, dims.data(), dims.size(), &t)), "");
  TensorPtr tensor(t);
  if (bytes) std::memcpy(onyx_tensor_data(t), data, bytes);
  OnyxValue* v = nullptr;
  EXPECT_EQ(message_of(onyx_value_create_tensor(t, &v)), "");
  return ValuePtr(v);
}

// Declares graph output/input `name` a sequence (or optional) of float tensors.
void declare(ONNX_NAMESPACE::ValueInfoProto* v, const std::string& name, bool sequence) {
  v->set_name(name);
  auto* elem = sequence ? v->mutable_type()->mutable_sequence_type()->mutable_elem_type()
                        : v->mutable_type()->mutable_optional_type()->mutable_elem_type();
  elem->mutable_tensor_type()->set_elem_type(1);
}

struct Session {
  onyx::Env env;
  OnyxSession* session = nullptr;
  explicit Session(const std::string& model) {
    env.add_provider_dir(ONYX_PROVIDER_DIR);
    onyx::SessionOptions options;
    options.provider("cpu").fallback(ONYX_FALLBACK_FAIL);
    EXPECT_EQ(message_of(onyx_session_create_from_buffer(env.get(), model.data(), model.size(), options.get(),
                                                         &session)),
              "");
  }
  ~Session() { onyx_session_release(session); }
};

// x [2, 3] -> SplitToSequence(axis 1) -> seq (3 items of [2, 1]);
// SequenceLength(seq) -> n; SequenceAt(seq, i) -> item.
std::string split_model() {
  onyx::testing::ModelBuilder b(17);
  b.input("x", {2, 3}).input("i", {}, 7).output("n", {}, 7).output("item", {2, 1});
  b.node("SplitToSequence", {"x"}, {"seq"}, "split").node("SequenceLength", {"seq"}, {"n"}, "len");
  b.node("SequenceAt", {"seq", "i"}, {"item"}, "at");
  b.proto().mutable_graph()->mutable_node(0)->add_attribute()->set_name("axis");
  auto* axis = b.proto().mutable_graph()->mutable_node(0)->mutable_attribute(0);
  axis->set_type(ONNX_NAMESPACE::AttributeProto::INT);
  axis->set_i(1);
  declare(b.proto().mutable_graph()->add_output(), "seq", true);
  return b.bytes();
}

TEST(CApiValues, SequenceModelRunsEndToEnd) {
  Session s(split_model());
  ASSERT_NE(s.session, nullptr);
  const float x[] = {1, 2, 3, 4, 5, 6};
  const int64_t i = -1;
  ValuePtr xv = tensor_value(ONYX_DTYPE_FLOAT32, {2, 3}, x, sizeof x);
  ValuePtr iv = tensor_value(ONYX_DTYPE_INT64, {}, &i, sizeof i);
  const char* names[] = {"x", "i"};
  const OnyxValue* inputs[] = {xv.get(), iv.get()};
  const char* out_names[] = {"n", "item", "seq"};
  OnyxValue* outs[3] = {};
  ASSERT_EQ(message_of(onyx_session_run_values(s.session, names, inputs, 2, out_names, 3, outs)), "");
  ValuePtr n(outs[0]), item(outs[1]), seq(outs[2]);
  OnyxTensor* raw = nullptr;
  ASSERT_EQ(message_of(onyx_value_tensor(n.get(), &raw)), "");
  TensorPtr nt(raw);
  EXPECT_EQ(*static_cast<int64_t*>(onyx_tensor_data(raw)), 3);
  ASSERT_EQ(message_of(onyx_value_tensor(item.get(), &raw)), "");
  TensorPtr it(raw);
  ASSERT_EQ(onyx_tensor_element_count(raw), 2);
  EXPECT_EQ(static_cast<float*>(onyx_tensor_data(raw))[0], 3.f);
  EXPECT_EQ(static_cast<float*>(onyx_tensor_data(raw))[1], 6.f);
  EXPECT_EQ(onyx_value_kind(seq.get()), ONYX_VALUE_SEQUENCE);
  EXPECT_EQ(onyx_value_count(seq.get()), 3u);
  EXPECT_EQ(onyx_value_elem_dtype(seq.get()), ONYX_DTYPE_FLOAT32);

  // The metadata says which outputs are sequences.
  OnyxValueMetadata m{};
  m.struct_size = sizeof m;
  ASSERT_EQ(message_of(onyx_session_output_metadata(s.session, 2, &m)), "");
  EXPECT_EQ(m.kind, ONYX_VALUE_SEQUENCE);

  // onyx_session_run cannot return a sequence: it says so.
  OnyxTensor* tensor_outs[1] = {};
  OnyxTensor* xt = nullptr;
  ASSERT_EQ(message_of(onyx_value_tensor(xv.get(), &xt)), "");
  TensorPtr xtp(xt);
  OnyxTensor* itp = nullptr;
  ASSERT_EQ(message_of(onyx_value_tensor(iv.get(), &itp)), "");
  TensorPtr itpp(itp);
  const OnyxTensor* tensor_inputs[] = {xt, itp};
  const char* seq_name[] = {"seq"};
  std::string m2 = message_of(onyx_session_run(s.session, names, tensor_inputs, 2, seq_name, 1, tensor_outs));
  EXPECT_NE(m2.find("run_values"), std::string::npos) << m2;
}

TEST(CApiValues, SequenceOfMismatchedElementTypesIsRefused) {
  const float f = 1;
  const int64_t k = 2;
  ValuePtr a = tensor_value(ONYX_DTYPE_FLOAT32, {1}, &f, sizeof f);
  ValuePtr b = tensor_value(ONYX_DTYPE_INT64, {1}, &k, sizeof k);
  const OnyxValue* items[] = {a.get(), b.get()};
  OnyxValue* out = nullptr;
  OnyxStatus* st = onyx_value_create_sequence(ONYX_DTYPE_UNDEFINED, items, 2, &out);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(onyx_status_code(st), ONYX_STATUS_INVALID_ARGUMENT);
  std::string m = message_of(st);
  EXPECT_NE(m.find("item 1 is int64, the sequence's is float32"), std::string::npos) << m;
  EXPECT_EQ(out, nullptr);
  // A declared element type is enforced too.
  const OnyxValue* one[] = {a.get()};
  m = message_of(onyx_value_create_sequence(ONYX_DTYPE_INT64, one, 1, &out));
  EXPECT_NE(m.find("item 0 is float32, the sequence's is int64"), std::string::npos) << m;
}

// opt (optional float tensor) -> OptionalGetElement -> y.
std::string get_element_model() {
  onyx::testing::ModelBuilder b(18);
  b.output("y", {-1});
  b.node("OptionalGetElement", {"opt"}, {"y"}, "get");
  declare(b.proto().mutable_graph()->add_input(), "opt", false);
  return b.bytes();
}

TEST(CApiValues, AbsentOptionalWhereAValueIsRequiredFailsClearly) {
  Session s(get_element_model());
  ASSERT_NE(s.session, nullptr);
  OnyxValue* empty = nullptr;
  ASSERT_EQ(message_of(onyx_value_create_optional(nullptr, &empty)), "");
  ValuePtr ev(empty);
  const char* names[] = {"opt"};
  const OnyxValue* inputs[] = {ev.get()};
  OnyxValue* out[1] = {};
  std::string m = message_of(onyx_session_run_values(s.session, names, inputs, 1, nullptr, 1, out));
  EXPECT_NE(m.find("OptionalGetElement 'get': the optional input is empty"), std::string::npos) << m;
  // Left out, the optional input is empty too: the same error.
  m = message_of(onyx_session_run_values(s.session, nullptr, nullptr, 0, nullptr, 1, out));
  EXPECT_NE(m.find("the optional input is empty"), std::string::npos) << m;

  // With a value, it runs.
  const float v[] = {7, 8};
  ValuePtr t = tensor_value(ONYX_DTYPE_FLOAT32, {2}, v, sizeof v);
  OnyxValue* full = nullptr;
  ASSERT_EQ(message_of(onyx_value_create_optional(t.get(), &full)), "");
  ValuePtr fv(full);
  const OnyxValue* given[] = {fv.get()};
  ASSERT_EQ(message_of(onyx_session_run_values(s.session, names, given, 1, nullptr, 1, out)), "");
  ValuePtr y(out[0]);
  OnyxTensor* raw = nullptr;
  ASSERT_EQ(message_of(onyx_value_tensor(y.get(), &raw)), "");
  TensorPtr yt(raw);
  EXPECT_EQ(static_cast<float*>(onyx_tensor_data(raw))[1], 8.f);

  // A plain tensor where the model declares an optional: refused, naming both.
  const OnyxValue* wrong[] = {t.get()};
  m = message_of(onyx_session_run_values(s.session, names, wrong, 1, nullptr, 1, out));
  EXPECT_NE(m.find("input 'opt' is a float32 tensor [2], the model expects an optional"), std::string::npos) << m;
}

ONNX_NAMESPACE::AttributeProto* add_attr(onyx::testing::ModelBuilder& b, int node, const std::string& name) {
  auto* a = b.proto().mutable_graph()->mutable_node(node)->add_attribute();
  a->set_name(name);
  return a;
}

// A small text classifier on a string input: lower-case, drop stopwords,
// then score each remaining word by a regular expression (1 = positive).
std::string text_classifier_model() {
  constexpr int kString = 8;
  onyx::testing::ModelBuilder b(20);
  b.input("text", {-1}, kString).output("words", {-1}, kString).output("score", {-1});
  b.node("StringNormalizer", {"text"}, {"words"}, "norm");
  b.node("RegexFullMatch", {"words"}, {"positive"}, "match");
  b.node("Cast", {"positive"}, {"score"}, "cast");
  auto* action = add_attr(b, 0, "case_change_action");
  action->set_type(ONNX_NAMESPACE::AttributeProto::STRING);
  action->set_s("LOWER");
  auto* stops = add_attr(b, 0, "stopwords");
  stops->set_type(ONNX_NAMESPACE::AttributeProto::STRINGS);
  stops->add_strings("the");
  auto* pattern = add_attr(b, 1, "pattern");
  pattern->set_type(ONNX_NAMESPACE::AttributeProto::STRING);
  pattern->set_s("(good|great|fine)");
  auto* to = add_attr(b, 2, "to");
  to->set_type(ONNX_NAMESPACE::AttributeProto::INT);
  to->set_i(1);
  return b.bytes();
}

TEST(CApiValues, TextClassifierOnAStringInputRunsEndToEnd) {
  Session s(text_classifier_model());
  ASSERT_NE(s.session, nullptr);
  const char* words[] = {"The", "Movie", "was", "GREAT"};
  const int64_t dims[] = {4};
  OnyxTensor* text = nullptr;
  ASSERT_EQ(message_of(onyx_tensor_create_strings(words, nullptr, dims, 1, &text)), "");
  TensorPtr tp(text);
  const char* names[] = {"text"};
  const OnyxTensor* inputs[] = {text};
  OnyxTensor* outs[2] = {};
  ASSERT_EQ(message_of(onyx_session_run(s.session, names, inputs, 1, nullptr, 2, outs)), "");
  TensorPtr kept(outs[0]), score(outs[1]);
  ASSERT_EQ(onyx_tensor_element_count(outs[0]), 3);  // "The" is a stopword
  const char* data = nullptr;
  size_t length = 0;
  ASSERT_EQ(message_of(onyx_tensor_string(outs[0], 2, &data, &length)), "");
  EXPECT_EQ(std::string(data, length), "great");
  const float* scores = static_cast<const float*>(onyx_tensor_data(outs[1]));
  EXPECT_EQ(scores[0], 0.f);
  EXPECT_EQ(scores[2], 1.f);
}

TEST(CApiValues, StringTensorWithInvalidUtf8IsRefused) {
  const char* words[] = {"fine", "caf\xc3", "ok"};  // a cut two-byte sequence
  const int64_t dims[] = {3};
  OnyxTensor* out = nullptr;
  OnyxStatus* st = onyx_tensor_create_strings(words, nullptr, dims, 1, &out);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(onyx_status_code(st), ONYX_STATUS_INVALID_ARGUMENT);
  std::string m = message_of(st);
  EXPECT_NE(m.find("string element 1 is not valid UTF-8 (byte 3)"), std::string::npos) << m;
  EXPECT_EQ(out, nullptr);
  // An overlong encoding and a lone continuation byte too.
  const char* overlong[] = {"\xc0\xaf"};
  const char* stray[] = {"a\x80"};
  const int64_t one[] = {1};
  EXPECT_NE(message_of(onyx_tensor_create_strings(overlong, nullptr, one, 1, &out)).find("byte 0"), std::string::npos);
  EXPECT_NE(message_of(onyx_tensor_create_strings(stray, nullptr, one, 1, &out)).find("byte 1"), std::string::npos);
  // Reading a string from a numeric tensor is refused.
  OnyxTensor* f = nullptr;
  ASSERT_EQ(message_of(onyx_tensor_create(ONYX_DTYPE_FLOAT32, one, 1, &f)), "");
  TensorPtr fp(f);
  const char* data = nullptr;
  size_t length = 0;
  EXPECT_NE(message_of(onyx_tensor_string(f, 0, &data, &length)).find("not string"), std::string::npos);
}

// The C++ wrapper over the same functions.
TEST(CppValues, WrapperRunsAnOptionalAndDescribesIt) {
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  onyx::SessionOptions options;
  options.provider("cpu").fallback(ONYX_FALLBACK_FAIL);
  const std::string model = get_element_model();
  onyx::Session session(env, std::as_bytes(std::span<const char>(model.data(), model.size())), options);
  ASSERT_EQ(session.inputs().size(), 1u);
  EXPECT_EQ(session.inputs()[0].kind, ONYX_VALUE_OPTIONAL);
  const float v[] = {7, 8};
  onyx::Tensor t = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {2}, std::span<const float>(v));
  onyx::Value element = onyx::Value::tensor(t);
  onyx::Value opt = onyx::Value::optional(&element);
  EXPECT_EQ(opt.kind(), ONYX_VALUE_OPTIONAL);
  EXPECT_EQ(opt.count(), 1u);
  std::vector<onyx::Value> out = session.run_values({{"opt", &opt}});
  ASSERT_EQ(out.size(), 1u);
  onyx::Tensor y = out[0].as_tensor();
  EXPECT_EQ(y.data<float>()[0], 7.f);
  onyx::Value empty = onyx::Value::optional(nullptr);
  EXPECT_THROW(session.run_values({{"opt", &empty}}), onyx::Error);
  std::vector<onyx::Value> mixed;
  mixed.push_back(onyx::Value::tensor(t));
  mixed.push_back(onyx::Value::tensor(onyx::Tensor::zeros(ONYX_DTYPE_INT64, {1})));
  EXPECT_THROW(onyx::Value::sequence(mixed), onyx::Error);
}

}  // namespace
