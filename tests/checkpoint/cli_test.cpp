// cli_test.cpp: `onyx checkpoint` end to end on real files: inspect (text and
// JSON), nominal, reshard 4 -> 2 -> 1, aggregate (also weights only), diff,
// import/export with an ONNX model, and the errors users see.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>

#include "checkpoint_test_util.h"
#include "onyx/checkpoint_onnx.h"
#include "onyx/checkpoint_tools.h"
#include "test_models.h"

namespace onyx::checkpoint {
namespace {

using testing::TempDir;

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Result onyx(const std::string& args) {
  Result r;
  std::string command = std::string(ONYX_CLI_PATH) + " checkpoint " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string q(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

TEST(CheckpointCli, InspectPrintsEveryPart) {
  TempDir dir;
  ASSERT_TRUE(save(testing::sample_checkpoint(), dir / "a.ckpt").ok());
  Result r = onyx("inspect " + q(dir / "a.ckpt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"format version 1", "sample-model sha256:0123abcd", "every checksum verified",
                           "fc1.weight   float32 [16, 12]   768 bytes  crc32c 88b682a1",
                           "default: step 1234, initial learning rate 0.001, state of 3 parameters",
                           "momentum  bfloat16 [33]", "epoch = 7 (int64)", "best_loss = 0.12345678901234568 (double)"})
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;

  size_t packed = r.output.find("\n  packed ");
  ASSERT_NE(packed, std::string::npos) << r.output;
  std::string line = r.output.substr(packed + 1, r.output.find('\n', packed + 1) - packed - 1);
  EXPECT_NE(line.find(" int4 [7] "), std::string::npos) << line;
  EXPECT_NE(line.find(" 4 bytes "), std::string::npos) << line;

  r = onyx("inspect --json " + q(dir / "a.ckpt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"\"format_version\":1", "\"shard_count\":1", "\"nominal\":false",
                           "{\"name\":\"fc1.weight\",\"dtype\":\"float32\",\"shape\":[16,12],\"bytes\":768,\"crc32c\":",
                           "\"name\":\"no_decay\",\"step\":-1", "\"epoch\":7"})
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
}

TEST(CheckpointCli, NominalReshardAggregateAndDiff) {
  TempDir dir;
  Checkpoint c = testing::sample_checkpoint();
  c.module.trainable.push_back(testing::random_tensor("big", ONYX_DTYPE_FLOAT32, {40, 50}, 77));
  ASSERT_TRUE(save(c, dir / "full.ckpt").ok());

  Result r = onyx("nominal " + q(dir / "full.ckpt") + " " + q(dir / "nominal.ckpt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  StatusOr<Checkpoint> nominal = load(dir / "nominal.ckpt");
  ASSERT_TRUE(nominal.ok());
  EXPECT_TRUE(nominal->nominal());
  EXPECT_NE(onyx("inspect " + q(dir / "nominal.ckpt")).output.find("nominal (names, dtypes and shapes only)"),
            std::string::npos);

  ASSERT_EQ(onyx("reshard " + q(dir / "full.ckpt") + " --world-size 4 --output " + q(dir / "w4")).exit_code, 0);
  r = onyx("reshard " + q(dir / "w4/rank2.ckpt") + " " + q(dir / "w4/rank0.ckpt") + " " + q(dir / "w4/rank3.ckpt") +
           " " + q(dir / "w4/rank1.ckpt") + " --world-size 2 --output " + q(dir / "w2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(onyx("reshard " + q(dir / "w2/rank0.ckpt") + " " + q(dir / "w2/rank1.ckpt") +
                 " --world-size 1 --output " + q(dir / "w1.ckpt")).exit_code, 0);
  r = onyx("diff " + q(dir / "full.ckpt") + " " + q(dir / "w1.ckpt"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("identical"), std::string::npos);

  r = onyx("aggregate " + q(dir / "w4/rank3.ckpt") + " " + q(dir / "w4/rank1.ckpt") + " " + q(dir / "w4/rank0.ckpt") +
           " " + q(dir / "w4/rank2.ckpt") + " --weights-only -o " + q(dir / "weights.ckpt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = onyx("diff " + q(dir / "full.ckpt") + " " + q(dir / "weights.ckpt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("optimizer group 'default': only in the first"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("parameter '"), std::string::npos) << "no parameter differs:\n" << r.output;

  r = onyx("aggregate " + q(dir / "w4/rank3.ckpt") + " " + q(dir / "w4/rank1.ckpt") + " --output " + q(dir / "x.ckpt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("onyx: error: rank 0 of 4 is missing"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.ckpt"));
}

TEST(CheckpointCli, ImportAndExportOnnxModels) {
  TempDir dir;
  test_models::write_model(test_models::build_cnn(test_models::make_cnn_weights()), dir / "cnn.onnx");
  Result r = onyx("import " + q(dir / "cnn.onnx") + " " + q(dir / "cnn.ckpt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = onyx("import " + q(dir / "cnn.onnx") + " " + q(dir / "cnn_nominal.ckpt") + " --nominal");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(std::filesystem::file_size(dir / "cnn_nominal.ckpt") * 100, std::filesystem::file_size(dir / "cnn.ckpt"));

  // New weights into the model: export, then import the exported model and compare.
  StatusOr<Checkpoint> c = load(dir / "cnn.ckpt");
  ASSERT_TRUE(c.ok());
  for (TensorRecord& t : c->module.trainable) {
    t.data = t.data.clone();
    t.data.data_as<float>()[0] = 0.5f;
  }
  ASSERT_TRUE(save(*c, dir / "changed.ckpt").ok());
  r = onyx("export " + q(dir / "changed.ckpt") + " " + q(dir / "cnn.onnx") + " " + q(dir / "out.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(onyx("import " + q(dir / "out.onnx") + " " + q(dir / "out.ckpt")).exit_code, 0);
  r = onyx("diff " + q(dir / "changed.ckpt") + " " + q(dir / "out.ckpt"));
  EXPECT_EQ(r.exit_code, 0) << r.output;

  // The same with the weights as external data beside the model.
  r = onyx("export " + q(dir / "changed.ckpt") + " " + q(dir / "cnn.onnx") + " " + q(dir / "ext.onnx") +
           " --external-data ext.weights");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(std::filesystem::file_size(dir / "ext.onnx"), 16u * 1024);  // fc1.weight alone is 200 KB
  EXPECT_GT(std::filesystem::file_size(dir / "ext.weights"), 200u * 1024);
  ASSERT_EQ(onyx("import " + q(dir / "ext.onnx") + " " + q(dir / "ext.ckpt")).exit_code, 0);
  r = onyx("diff " + q(dir / "changed.ckpt") + " " + q(dir / "ext.ckpt"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(onyx("export " + q(dir / "changed.ckpt") + " " + q(dir / "cnn.onnx") + " " + q(dir / "x.onnx") +
                 " --external-data ../up.bin").output.find("must be a plain file name"),
            std::string::npos);

  r = onyx("export " + q(dir / "cnn_nominal.ckpt") + " " + q(dir / "cnn.onnx") + " " + q(dir / "n.onnx"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("nominal"), std::string::npos) << r.output;
}

TEST(CheckpointCli, ImportReadsExternalDataBesideTheModelAndRefusesEscapes) {
  TempDir dir;
  std::string side;
  test_models::write_model(test_models::build_external_data_model("weights.bin", 64, &side), dir / "add.onnx");
  test_models::write_bytes(side, dir / "weights.bin");
  Result r = onyx("import " + q(dir / "add.onnx") + " " + q(dir / "add.ckpt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  StatusOr<Checkpoint> c = load(dir / "add.ckpt");
  ASSERT_TRUE(c.ok());
  const TensorRecord* w = c->find_parameter("w");
  ASSERT_NE(w, nullptr);
  std::vector<float> expected = test_models::add_model_weight();
  ASSERT_EQ(w->shape, (Shape{2, 3}));
  EXPECT_EQ(0, std::memcmp(w->data.data(), expected.data(), expected.size() * sizeof(float)));

  test_models::write_model(test_models::build_external_data_model("../escape.bin", 0, &side), dir / "escape.onnx");
  r = onyx("import " + q(dir / "escape.onnx") + " " + q(dir / "escape.ckpt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("'w'"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "escape.ckpt"));
}

TEST(CheckpointCli, DamagedAndUnusableInputsGiveClearErrors) {
  TempDir dir;
  ASSERT_TRUE(save(testing::sample_checkpoint(), dir / "a.ckpt").ok());
  std::vector<char> bytes;
  {
    std::ifstream in(dir / "a.ckpt", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[64] = char(bytes[64] ^ 4);  // first byte of fc1.weight's data
  std::ofstream(dir / "flip.ckpt", std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  Result r = onyx("inspect " + q(dir / "flip.ckpt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("trainable parameter 'fc1.weight': data checksum mismatch"), std::string::npos) << r.output;

  std::ofstream(dir / "short.ckpt", std::ios::binary).write(bytes.data(), 100);
  r = onyx("inspect " + q(dir / "short.ckpt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("truncated"), std::string::npos) << r.output;

  r = onyx("inspect " + q(dir / "missing.ckpt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("missing.ckpt"), std::string::npos) << r.output;

  EXPECT_NE(onyx("frobnicate").output.find("unknown checkpoint action 'frobnicate'"), std::string::npos);
  EXPECT_NE(onyx("reshard " + q(dir / "a.ckpt") + " --output x").output.find("--world-size is required"),
            std::string::npos);
  EXPECT_NE(onyx("diff " + q(dir / "a.ckpt")).output.find("usage: onyx checkpoint diff A B"), std::string::npos);
}

}  // namespace
}  // namespace onyx::checkpoint
