// bad_input_test.cpp: malformed models and wrong inputs give errors that name
// the problem and the place, through the public API (never a crash).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "test_models.h"

namespace onyx::e2e {
namespace {

namespace tm = onyx::test_models;
using ::testing::HasSubstr;

// The message of the onyx::Error that `fn` throws ("" and a failure if none).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const onyx::Error& e) {
    EXPECT_NE(e.code(), ONYX_STATUS_OK);
    return e.what();
  }
  ADD_FAILURE() << "expected an onyx::Error";
  return "";
}

std::string serialized(const onnx::ModelProto& proto) {
  std::string bytes;
  proto.SerializeToString(&bytes);
  return bytes;
}

std::span<const std::byte> as_bytes(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string bytes = serialized(tm::build_mlp(tm::make_mlp_weights()));
    mlp_ = std::make_unique<onyx::Session>(env_, as_bytes(bytes));
  }
  std::string run_error(const std::vector<std::pair<std::string, const onyx::Tensor*>>& inputs) {
    return error_of([&] { mlp_->run(inputs); });
  }
  onyx::Env env_;
  std::unique_ptr<onyx::Session> mlp_;
};

TEST_F(BadInput, TruncatedModelFile) {
  TempDir dir;
  std::string bytes = serialized(tm::build_mlp(tm::make_mlp_weights()));
  tm::write_bytes(bytes.substr(0, bytes.size() / 2), dir / "truncated.onnx");
  std::string message = error_of([&] { onyx::Session session(env_, (dir / "truncated.onnx").string()); });
  EXPECT_THAT(message, HasSubstr("truncated.onnx"));  // names the file
  EXPECT_THAT(message, HasSubstr("not a valid ONNX model"));
}

TEST_F(BadInput, TruncatedModelBuffer) {
  std::string bytes = serialized(tm::build_cnn(tm::make_cnn_weights()));
  bytes.resize(bytes.size() - 7);
  std::string message = error_of([&] { onyx::Session session(env_, as_bytes(bytes)); });
  EXPECT_THAT(message, HasSubstr("not a valid ONNX model"));
}

TEST_F(BadInput, MissingModelFile) {
  std::string message = error_of([&] { onyx::Session session(env_, "/nonexistent/dir/model.onnx"); });
  EXPECT_THAT(message, HasSubstr("/nonexistent/dir/model.onnx"));
  EXPECT_THAT(message, HasSubstr("does not exist"));
}

TEST_F(BadInput, WrongInputShape) {
  onyx::Tensor x = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {2, 783});
  std::string message = run_error({{"x", &x}});
  EXPECT_THAT(message, HasSubstr("input 'x'"));
  EXPECT_THAT(message, HasSubstr("783"));  // the shape given
  EXPECT_THAT(message, HasSubstr("784"));  // the shape expected
}

TEST_F(BadInput, WrongInputRank) {
  onyx::Tensor x = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {784});
  std::string message = run_error({{"x", &x}});
  EXPECT_THAT(message, HasSubstr("input 'x'"));
  EXPECT_THAT(message, HasSubstr("shape"));
}

TEST_F(BadInput, WrongInputDtype) {
  onyx::Tensor x = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT64, {1, 784});
  std::string message = run_error({{"x", &x}});
  EXPECT_THAT(message, HasSubstr("input 'x'"));
  EXPECT_THAT(message, HasSubstr("float64"));
  EXPECT_THAT(message, HasSubstr("float32"));
}

TEST_F(BadInput, MissingInput) {
  std::string message = run_error({});
  EXPECT_THAT(message, HasSubstr("missing input 'x'"));
}

TEST_F(BadInput, UnknownInputName) {
  onyx::Tensor x = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {1, 784});
  std::string message = run_error({{"x", &x}, {"not_an_input", &x}});
  EXPECT_THAT(message, HasSubstr("'not_an_input'"));
}

TEST_F(BadInput, ExternalDataOutsideModelFolder) {
  TempDir dir;
  std::filesystem::create_directories(dir / "models");
  std::string side;
  tm::write_model(tm::build_external_data_model("../secret.bin", 0, &side), dir / "models/escape.onnx");
  // The file exists: the refusal must come from where it is, not from its absence.
  tm::write_bytes(side, dir / "secret.bin");
  std::string message = error_of([&] { onyx::Session session(env_, (dir / "models/escape.onnx").string()); });
  EXPECT_THAT(message, HasSubstr("../secret.bin"));
  EXPECT_THAT(message, HasSubstr("outside the model's folder"));
}

TEST_F(BadInput, ExternalDataAbsolutePath) {
  TempDir dir;
  std::string side;
  std::string absolute = (dir / "weights.bin").string();
  tm::write_model(tm::build_external_data_model(absolute, 0, &side), dir / "absolute.onnx");
  tm::write_bytes(side, dir / "weights.bin");
  std::string message = error_of([&] { onyx::Session session(env_, (dir / "absolute.onnx").string()); });
  EXPECT_THAT(message, HasSubstr("absolute path"));
}

TEST_F(BadInput, ExternalDataFromBufferRefused) {
  std::string side;
  std::string bytes = serialized(tm::build_external_data_model("w.bin", 0, &side));
  std::string message = error_of([&] { onyx::Session session(env_, as_bytes(bytes)); });
  EXPECT_THAT(message, HasSubstr("w.bin"));
  EXPECT_THAT(message, HasSubstr("loaded from memory"));
}

TEST_F(BadInput, ExternalDataFileTooShort) {
  TempDir dir;
  std::string side;
  tm::write_model(tm::build_external_data_model("short.bin", 64, &side), dir / "short.onnx");
  tm::write_bytes(side.substr(0, side.size() - 4), dir / "short.bin");
  std::string message = error_of([&] { onyx::Session session(env_, (dir / "short.onnx").string()); });
  EXPECT_THAT(message, HasSubstr("short.bin"));
}

// The session stays usable after rejected runs.
TEST_F(BadInput, SessionWorksAfterErrors) {
  onyx::Tensor bad = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {1, 5});
  run_error({{"x", &bad}});
  onyx::Tensor x = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {1, 784});
  std::vector<onyx::Tensor> out = mlp_->run({{"x", &x}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{1, 10}));
}

}  // namespace
}  // namespace onyx::e2e
