// model_accuracy_test.cpp: the MLP and CNN test models, run through the public
// C++ API on the CPU provider, against float64 references of the same math.
#include <gtest/gtest.h>

#include <cstdio>

#include "e2e_util.h"
#include "test_models.h"

namespace onyx::e2e {
namespace {

namespace tm = onyx::test_models;

// Tolerance on the normalized max error (see compare() in e2e_util.h). The
// runtime computes in float32 (unit roundoff u = 6e-8); a length-K dot product
// is off by at most ~K*u of its terms' magnitude (K <= 784 here: 4.7e-5) and
// typically ~sqrt(K)*u (~2e-6), compounded mildly over 3-4 layers. 1e-4 is
// above that bound yet far below what a wrong result gives (a swapped layout,
// a missing bias, a mis-padded conv all give errors of order 1e-2 .. 1).
constexpr double kTolerance = 1e-4;

enum class Kind { kMlp, kCnn };

struct TestModel {
  Kind kind;
  tm::MlpWeights mlp;
  tm::CnnWeights cnn;
  onnx::ModelProto proto;

  explicit TestModel(Kind k) : kind(k) {
    if (k == Kind::kMlp) {
      mlp = tm::make_mlp_weights();
      proto = tm::build_mlp(mlp);
    } else {
      cnn = tm::make_cnn_weights();
      proto = tm::build_cnn(cnn);
    }
  }
  const char* name() const { return kind == Kind::kMlp ? "mlp" : "cnn"; }
  std::vector<int64_t> input_dims(int64_t batch) const {
    return kind == Kind::kMlp ? std::vector<int64_t>{batch, 784} : std::vector<int64_t>{batch, 1, 28, 28};
  }
  std::vector<double> reference(const std::vector<float>& x, int64_t batch) const {
    return kind == Kind::kMlp ? tm::mlp_reference(mlp, x, batch) : tm::cnn_reference(cnn, x, batch);
  }
};

void expect_matches_reference(onyx::Session& session, const TestModel& model, int64_t batch, uint64_t seed,
                              const char* how) {
  std::vector<float> x = tm::random_input(size_t(batch * 784), seed);
  std::vector<int64_t> out_dims;
  std::vector<float> out = run_single(session, model.input_dims(batch), x, &out_dims);
  EXPECT_EQ(out_dims, (std::vector<int64_t>{batch, 10}));
  std::vector<double> ref = model.reference(x, batch);
  ASSERT_EQ(out.size(), ref.size());
  Comparison c = compare(out, ref);
  std::printf("[ accuracy ] %s %s batch %lld: max |err| %.3g, max |ref| %.3g, normalized error %.3g (tolerance %.0e)\n",
              model.name(), how, static_cast<long long>(batch), c.max_abs_error, c.scale, c.normalized_error, kTolerance);
  // A reference near zero would make the comparison vacuous.
  EXPECT_GT(c.scale, 0.1) << "degenerate reference";
  EXPECT_LE(c.normalized_error, kTolerance)
      << model.name() << " batch " << batch << ": worst element " << c.worst_index << " is "
      << out[c.worst_index] << ", reference " << ref[c.worst_index];
}

onyx::SessionOptions cpu_options() {
  onyx::SessionOptions options;
  options.provider("cpu").fallback(ONYX_FALLBACK_FAIL);  // every node must run on the CPU provider
  return options;
}

// One session serves batch 1, then 8, then 1 again: plans for several input
// shapes must coexist without disturbing each other.
void check_session(onyx::Session& session, const TestModel& model, const char* how) {
  expect_matches_reference(session, model, 1, 11, how);
  expect_matches_reference(session, model, 8, 12, how);
  expect_matches_reference(session, model, 1, 13, how);
}

class ModelAccuracy : public ::testing::TestWithParam<Kind> {};

TEST_P(ModelAccuracy, FromFileMatchesFloat64Reference) {
  TestModel model(GetParam());
  TempDir dir;
  std::filesystem::path path = dir / (std::string(model.name()) + ".onnx");
  tm::write_model(model.proto, path);
  onyx::Env env;
  onyx::Session session(env, path.string(), cpu_options());
  check_session(session, model, "file");
}

TEST_P(ModelAccuracy, FromBufferMatchesFloat64Reference) {
  TestModel model(GetParam());
  std::string bytes;
  ASSERT_TRUE(model.proto.SerializeToString(&bytes));
  onyx::Env env;
  onyx::Session session(env, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), cpu_options());
  bytes.assign(bytes.size(), '\0');  // the session must have copied the buffer
  check_session(session, model, "buffer");
}

TEST_P(ModelAccuracy, DeclaresSymbolicBatch) {
  TestModel model(GetParam());
  std::string bytes;
  ASSERT_TRUE(model.proto.SerializeToString(&bytes));
  onyx::Env env;
  onyx::Session session(env, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), cpu_options());
  std::vector<onyx::ValueMetadata> inputs = session.inputs(), outputs = session.outputs();
  ASSERT_EQ(inputs.size(), 1u);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(inputs[0].name, "x");
  EXPECT_EQ(inputs[0].dtype, ONYX_DTYPE_FLOAT32);
  std::vector<int64_t> expected_in = model.input_dims(-1);  // -1: the symbolic batch dim
  EXPECT_EQ(inputs[0].dims, expected_in);
  EXPECT_EQ(outputs[0].name, "logits");
  EXPECT_EQ(outputs[0].dims, (std::vector<int64_t>{-1, 10}));
}

INSTANTIATE_TEST_SUITE_P(Models, ModelAccuracy, ::testing::Values(Kind::kMlp, Kind::kCnn),
                         [](const auto& param_info) { return param_info.param == Kind::kMlp ? "Mlp" : "Cnn"; });

// External data: the weight lives in a side file 64 bytes in (after filler
// that would give wrong sums if the offset were ignored).
TEST(ExternalData, WeightsFromSideFile) {
  TempDir dir;
  std::string side;
  tm::write_model(tm::build_external_data_model("weights/add_w.bin", 64, &side), dir / "add_external.onnx");
  std::filesystem::create_directories(dir / "weights");
  tm::write_bytes(side, dir / "weights/add_w.bin");
  onyx::Env env;
  onyx::Session session(env, (dir / "add_external.onnx").string(), cpu_options());
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> out_dims;
  std::vector<float> y = run_single(session, {2, 3}, x, &out_dims);
  EXPECT_EQ(out_dims, (std::vector<int64_t>{2, 3}));
  std::vector<float> w = tm::add_model_weight();
  ASSERT_EQ(y.size(), w.size());
  // x + w with small exact binary values: the float32 sum is exact.
  for (size_t k = 0; k < y.size(); ++k) EXPECT_EQ(y[k], x[k] + w[k]) << "element " << k;
}

}  // namespace
}  // namespace onyx::e2e
