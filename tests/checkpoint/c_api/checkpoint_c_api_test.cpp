// checkpoint_c_api_test.cpp: the checkpoint C API (onyx_checkpoint_c_api.h)
// and its C++ wrapper through libonyx only, as an application uses them:
// inspection of the golden file, edits, tools, ONNX exchange, and errors.
#include <onyx/onyx_checkpoint.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <limits>
#include <map>
#include <filesystem>
#include <string>

#include "test_models.h"

namespace {

namespace fs = std::filesystem;

const fs::path kGolden = fs::path(ONYX_CHECKPOINT_TEST_DATA) / "sample_v1.ckpt";

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "onyx_ckpt_c_api_XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// The status's message, released; "" for success.
std::string message_of(OnyxStatus* status) {
  std::string text = onyx_status_message(status);
  onyx_status_release(status);
  return text;
}

TEST(CheckpointCApi, InspectsEveryPartOfTheGoldenFile) {
  onyx::CheckpointState c = onyx::CheckpointState::load(kGolden.string(), {.memory_map = true, .verify_data = true});
  onyx::CheckpointMetadata m = c.metadata();
  EXPECT_EQ(m.format_version, 1u);
  EXPECT_EQ(m.model_identity, "sample-model sha256:0123abcd");
  EXPECT_EQ(m.shard_count, 1u);
  EXPECT_FALSE(c.nominal());

  std::vector<onyx::CheckpointTensor> trainable = c.trainable(), frozen = c.frozen();
  ASSERT_EQ(trainable.size(), 5u);
  ASSERT_EQ(frozen.size(), 5u);
  EXPECT_EQ(trainable[0].name, "fc1.weight");
  EXPECT_EQ(trainable[0].dtype, ONYX_DTYPE_FLOAT32);
  EXPECT_EQ(trainable[0].shape, (std::vector<int64_t>{16, 12}));
  EXPECT_EQ(trainable[0].bytes, 768u);
  EXPECT_TRUE(trainable[0].has_data);
  ASSERT_TRUE(trainable[0].checksum.has_value());
  EXPECT_EQ(*trainable[0].checksum, 0x88b682a1u);
  EXPECT_FALSE(trainable[0].slice.has_value());
  EXPECT_EQ(trainable[4].shape, std::vector<int64_t>{});  // the scalar
  EXPECT_EQ(frozen[3].name, "packed");
  EXPECT_EQ(frozen[3].dtype, ONYX_DTYPE_INT4);
  EXPECT_EQ(frozen[3].bytes, 4u);  // 7 int4 elements, two per byte

  std::vector<onyx::CheckpointGroup> groups = c.optimizer_groups();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "default");
  EXPECT_EQ(groups[0].step, 1234);
  EXPECT_DOUBLE_EQ(groups[0].initial_learning_rate, 1e-3);
  ASSERT_EQ(groups[0].parameters.size(), 3u);
  EXPECT_EQ(groups[0].parameters[0].parameter, "fc1.weight");
  ASSERT_EQ(groups[0].parameters[0].tensors.size(), 2u);
  EXPECT_EQ(groups[0].parameters[0].tensors[1].name, "momentum2");
  EXPECT_EQ(groups[1].step, -1);
  EXPECT_EQ(groups[1].parameters[0].tensors[0].dtype, ONYX_DTYPE_BFLOAT16);

  std::map<std::string, onyx::CheckpointProperty> p = c.properties();
  EXPECT_EQ(std::get<int64_t>(p.at("epoch")), 7);
  EXPECT_EQ(std::get<int64_t>(p.at("min_int")), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(std::get<double>(p.at("best_loss")), 0.123456789012345678);
  EXPECT_EQ(std::get<std::string>(p.at("note")), std::string("utf-8 \xc3\xa9 and a \0 byte", 22));  // NUL kept
  EXPECT_EQ(std::get<std::string>(p.at("empty")), "");
  c.verify_data();
}

TEST(CheckpointCApi, StructSizeLimitsWhatIsWritten) {
  OnyxCheckpointState* c = nullptr;
  ASSERT_EQ(onyx_checkpoint_load(kGolden.c_str(), &c), nullptr);
  // A caller compiled against an older, shorter struct: fields past it stay untouched.
  OnyxCheckpointTensorInfo info{};
  info.struct_size = offsetof(OnyxCheckpointTensorInfo, bytes);
  info.bytes = 99;
  ASSERT_EQ(onyx_checkpoint_parameter_tensor(c, 0, &info, nullptr), nullptr);
  EXPECT_STREQ(info.name, "fc1.weight");
  EXPECT_EQ(info.bytes, 99u);
  onyx_checkpoint_release(c);
}

TEST(CheckpointCApi, EditsToolsAndDiff) {
  TempDir dir;
  onyx::CheckpointState c = onyx::CheckpointState::load(kGolden.string());
  c.set_property("epoch", int64_t(8));
  c.save((dir / "edited.ckpt").string());
  onyx::CheckpointState edited = onyx::CheckpointState::load((dir / "edited.ckpt").string());
  std::vector<std::string> lines = onyx::CheckpointState::diff(onyx::CheckpointState::load(kGolden.string()), edited);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("epoch"), std::string::npos) << lines[0];

  onyx::CheckpointState nominal = c.make_nominal();
  EXPECT_TRUE(nominal.nominal());
  EXPECT_FALSE(nominal.trainable()[0].has_data);
  EXPECT_EQ(nominal.trainable()[0].shape, (std::vector<int64_t>{16, 12}));

  std::vector<onyx::CheckpointState> shards = c.shard(3);
  ASSERT_EQ(shards.size(), 3u);
  onyx::CheckpointMetadata m = shards[2].metadata();
  EXPECT_EQ(m.shard_index, 2u);
  EXPECT_EQ(m.shard_count, 3u);
  bool sliced = false;
  for (const onyx::CheckpointTensor& t : shards[1].trainable())
    if (t.slice) sliced = t.slice->full_shape.size() > 0 && t.shape.size() == 1;
  EXPECT_TRUE(sliced);
  // Any order of the shards gives back the complete state.
  onyx::CheckpointState merged = onyx::CheckpointState::aggregate({&shards[2], &shards[0], &shards[1]});
  EXPECT_TRUE(onyx::CheckpointState::diff(merged, c).empty());
  onyx::CheckpointState weights = onyx::CheckpointState::aggregate({&shards[0], &shards[1], &shards[2]}, true);
  EXPECT_TRUE(weights.optimizer_groups().empty());

  try {
    onyx::CheckpointState::aggregate({&shards[0], &shards[2]});
    ADD_FAILURE() << "a missing rank was accepted";
  } catch (const onyx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("1"), std::string::npos) << e.what();
  }
}

TEST(CheckpointCApi, ImportAndExportOnnx) {
  TempDir dir;
  onyx::test_models::write_model(onyx::test_models::build_mlp(onyx::test_models::make_mlp_weights()),
                                 dir / "mlp.onnx");
  onyx::CheckpointState c = onyx::CheckpointState::import_onnx((dir / "mlp.onnx").string());
  ASSERT_FALSE(c.trainable().empty());
  const std::string first = c.trainable()[0].name;
  onyx::Tensor value = c.parameter(first);
  value.data<float>()[0] = 0.25f;
  c.update_parameter(first, value);

  c.export_onnx((dir / "mlp.onnx").string(), (dir / "out.onnx").string());
  onyx::CheckpointState back = onyx::CheckpointState::import_onnx((dir / "out.onnx").string());
  EXPECT_TRUE(onyx::CheckpointState::diff(c, back).empty());
  EXPECT_EQ(back.parameter(first).data<float>()[0], 0.25f);

  c.export_onnx((dir / "mlp.onnx").string(), (dir / "ext.onnx").string(), false, "ext.weights");
  EXPECT_TRUE(fs::exists(dir / "ext.weights"));
  EXPECT_TRUE(onyx::CheckpointState::diff(c, onyx::CheckpointState::import_onnx((dir / "ext.onnx").string())).empty());
}

TEST(CheckpointCApi, ErrorsNameTheFileOrTheIndexAndNothingThrows) {
  OnyxCheckpointState* c = nullptr;
  std::string text = message_of(onyx_checkpoint_load("/no/such/file.ckpt", &c));
  EXPECT_NE(text.find("/no/such/file.ckpt"), std::string::npos) << text;
  EXPECT_EQ(c, nullptr);  // out parameters are written only on success

  ASSERT_EQ(onyx_checkpoint_load(kGolden.c_str(), &c), nullptr);
  OnyxCheckpointGroupInfo group{};
  group.struct_size = sizeof group;
  text = message_of(onyx_checkpoint_group_info(c, 7, &group));
  EXPECT_NE(text.find("optimizer group index 7 is out of range (there are 2)"), std::string::npos) << text;
  OnyxCheckpointTensorInfo info{};
  info.struct_size = sizeof info;
  text = message_of(onyx_checkpoint_group_state_tensor(c, 0, 0, 5, &info));
  EXPECT_NE(text.find("fc1.weight"), std::string::npos) << text;
  OnyxCheckpointState* none[1] = {nullptr};
  text = message_of(onyx_checkpoint_shard(c, 0, none));
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(none[0], nullptr);
  text = message_of(onyx_checkpoint_import_onnx("/no/model.onnx", nullptr, 0, nullptr));
  EXPECT_NE(text.find("NULL"), std::string::npos) << text;
  OnyxCheckpointState* imported = nullptr;
  text = message_of(onyx_checkpoint_import_onnx("/no/model.onnx", nullptr, 0, &imported));
  EXPECT_NE(text.find("/no/model.onnx"), std::string::npos) << text;
  EXPECT_EQ(onyx_checkpoint_property_count(nullptr), 0u);
  EXPECT_EQ(onyx_checkpoint_group_count(nullptr), 0u);
  onyx_checkpoint_release(c);
  onyx_checkpoint_release(nullptr);
}

}  // namespace
