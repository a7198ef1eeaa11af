// onnx_interop_test.cpp: parameters from the CNN test model's initializers
// into a checkpoint and back into a model, and the size of a nominal
// checkpoint of the Fashion-MNIST CNN (< 1% of the complete one).
#include <gtest/gtest.h>

#include "checkpoint_test_util.h"
#include "ir/tensor_proto.h"
#include "onyx/checkpoint_onnx.h"
#include "onyx/checkpoint_tools.h"
#include "test_models.h"

namespace onyx::checkpoint {
namespace {

using testing::TempDir;

TEST(CheckpointOnnx, ImportsInitializersAndExportsThemBack) {
  onnx::ModelProto model = test_models::build_cnn(test_models::make_cnn_weights());
  StatusOr<Checkpoint> c = import_onnx_initializers(model, "");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_EQ(c->module.trainable.size() + c->module.frozen.size(), size_t(model.graph().initializer_size()));
  EXPECT_TRUE(c->module.frozen.empty() || c->module.frozen[0].dtype != ONYX_DTYPE_FLOAT32);
  for (const auto& proto : model.graph().initializer()) {
    const TensorRecord* t = c->find_parameter(proto.name());
    ASSERT_NE(t, nullptr) << proto.name();
    StatusOr<Tensor> expected = runtime::ir::tensor_from_proto(proto, "");
    ASSERT_TRUE(expected.ok());
    ASSERT_EQ(t->shape, expected->shape());
    EXPECT_EQ(0, std::memcmp(t->data.data(), expected->data(), expected->bytes())) << proto.name();
  }

  // Change the values, export into a copy of the model, read them back.
  Checkpoint changed = *c;
  for (TensorRecord& t : changed.module.trainable) {
    t.data = t.data.clone();
    for (int64_t k = 0; k < t.data.size(); ++k) t.data.data_as<float>()[k] = float(k % 7) - 3.0f;
  }
  onnx::ModelProto exported = model;
  ASSERT_TRUE(export_parameters_to_onnx(changed, exported).ok());
  StatusOr<Checkpoint> reimported = import_onnx_initializers(exported, "");
  ASSERT_TRUE(reimported.ok());
  EXPECT_TRUE(diff(changed, *reimported).empty());
}

TEST(CheckpointOnnx, TrainableSelectionAndRefusals) {
  onnx::ModelProto model = test_models::build_cnn(test_models::make_cnn_weights());
  std::vector<std::string> trainable = {"fc2.weight"};
  std::string first_name = model.graph().initializer(0).name();
  trainable[0] = first_name;
  StatusOr<Checkpoint> c = import_onnx_initializers(model, "", trainable);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_EQ(c->module.trainable.size(), 1u);
  EXPECT_EQ(c->module.trainable[0].name, first_name);

  std::vector<std::string> missing = {"no_such_weight"};
  EXPECT_NE(import_onnx_initializers(model, "", missing).status().message().find("'no_such_weight' is not an initializer"),
            std::string::npos);

  Checkpoint wrong = *c;
  wrong.module.trainable[0].shape.push_back(1);
  wrong.module.trainable[0].data = Tensor::allocate(ONYX_DTYPE_FLOAT32, wrong.module.trainable[0].shape);
  onnx::ModelProto copy = model;
  Status status = export_parameters_to_onnx(wrong, copy);
  EXPECT_EQ(status.code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(status.message().find("parameter '" + first_name + "' is float32"), std::string::npos) << status.message();

  Checkpoint extra = *c;
  extra.module.frozen.push_back(testing::random_tensor("not_in_model", ONYX_DTYPE_FLOAT32, {2}, 1));
  EXPECT_EQ(export_parameters_to_onnx(extra, copy).code(), ONYX_STATUS_NOT_FOUND);
  EXPECT_TRUE(export_parameters_to_onnx(extra, copy, /*add_missing=*/true).ok());
  EXPECT_EQ(export_parameters_to_onnx(make_nominal(*c), copy).code(), ONYX_STATUS_FAILED_PRECONDITION);
}

TEST(CheckpointOnnx, NominalCnnCheckpointIsUnderOnePercentOfTheCompleteOne) {
  TempDir dir;
  onnx::ModelProto model = test_models::build_cnn(test_models::make_cnn_weights());
  StatusOr<Checkpoint> c = import_onnx_initializers(model, "");
  ASSERT_TRUE(c.ok());
  c->metadata.model_identity = "fashion-mnist cnn";
  ASSERT_TRUE(save(*c, dir / "complete.ckpt").ok());
  ASSERT_TRUE(save(make_nominal(*c), dir / "nominal.ckpt").ok());
  uintmax_t complete = std::filesystem::file_size(dir / "complete.ckpt");
  uintmax_t nominal = std::filesystem::file_size(dir / "nominal.ckpt");
  std::printf("CNN checkpoint: complete %ju bytes, nominal %ju bytes (%.3f%%)\n", complete, nominal,
              100.0 * double(nominal) / double(complete));
  EXPECT_LT(double(nominal), 0.01 * double(complete));
}

}  // namespace
}  // namespace onyx::checkpoint
