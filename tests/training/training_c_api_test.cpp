// The training C API through its C++ wrapper (libonyx only): artifacts from
// a model file, checkpoint state and its property bag, a training session
// that learns, labels out of range, nominal refusal, save and reload,
// sessions from buffers, and export.
#include <onyx/onyx_training.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mlp_fixture.h"
#include "proto_builder.h"

namespace {

namespace fs = std::filesystem;
using onyx::mlp_fixture::Batch;
using onyx::mlp_fixture::kClasses;
using onyx::mlp_fixture::kIn;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("onyx_training_c_api_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string write_forward_model(const fs::path& dir) {
  auto model = onyx::mlp_fixture::forward_model(onyx::mlp_fixture::initial_params(3));
  std::string path = (dir / "mlp.onnx").string();
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
  return path;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

onyx::SessionOptions cpu_options() {
  onyx::SessionOptions o;
  o.provider("cpu").fallback(ONYX_FALLBACK_FAIL);
  return o;
}

std::pair<onyx::Tensor, onyx::Tensor> batch_tensors(const Batch& b) {
  return {onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {b.size, kIn}, b.x),
          onyx::Tensor::from<int64_t>(ONYX_DTYPE_INT64, {b.size}, b.labels)};
}

TEST(TrainingCApi, ArtifactsTrainSaveReloadExport) {
  TempDir tmp;
  std::string model = write_forward_model(tmp.path);
  fs::path art = tmp.path / "art";
  onyx::generate_artifacts(model, {{"loss", "crossentropy"}, {"optimizer", "sgd"}, {"optimizer_dir", ONYX_OPTIMIZER_DIR}},
                           art.string());
  for (const char* f : {"training.onnx", "eval.onnx", "optimizer.onnx", "checkpoint.ckpt"}) EXPECT_TRUE(fs::exists(art / f)) << f;

  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  auto state = onyx::CheckpointState::load((art / "checkpoint.ckpt").string());
  EXPECT_FALSE(state.nominal());
  EXPECT_EQ(onyx_checkpoint_parameter_count(state.get()), 4u);
  OnyxValueMetadata info{};
  info.struct_size = sizeof info;
  bool trainable = false;
  onyx::check(onyx_checkpoint_parameter_info(state.get(), 0, &info, &trainable));
  EXPECT_TRUE(trainable);
  EXPECT_EQ(info.dtype, ONYX_DTYPE_FLOAT32);

  onyx::TrainingSession session(env, state, (art / "training.onnx").string(), (art / "eval.onnx").string(),
                                (art / "optimizer.onnx").string(), cpu_options());
  EXPECT_EQ(session.input_names(), (std::vector<std::string>{"x", "labels"}));
  EXPECT_EQ(session.output_names(), (std::vector<std::string>{"loss", "logits"}));
  session.set_hyperparameter("momentum", 0.9f);
  session.set_lr_schedule("cosine:warmup=2,total=40", 0.1);
  EXPECT_NEAR(session.learning_rate(), 0.05, 1e-12);

  auto batches = onyx::mlp_fixture::make_batches(4, 16, 21);
  float first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    auto [x, y] = batch_tensors(batches[size_t(step) % batches.size()]);
    session.lazy_reset_grad();
    auto out = session.train_step({&x, &y});
    session.optimizer_step();
    session.scheduler_step();
    float loss = out[0].data<float>()[0];
    if (step == 0) first = loss;
    last = loss;
  }
  EXPECT_LT(last, 0.6f * first) << "40 steps of SGD should reduce the loss";

  // Labels out of range: a clear error, nothing crashes.
  {
    Batch bad = batches[0];
    bad.labels[3] = kClasses + 4;
    auto [x, y] = batch_tensors(bad);
    try {
      session.train_step({&x, &y});
      ADD_FAILURE() << "a label of " << kClasses + 4 << " with " << kClasses << " classes was accepted";
    } catch (const onyx::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(kClasses + 4)), std::string::npos) << e.what();
    }
  }

  state.set_property("epoch", int64_t(3));
  state.set_property("best_loss", 0.25);
  state.set_property("note", std::string("c api test"));
  fs::path saved = tmp.path / "trained.ckpt";
  state.save(saved.string());
  auto reloaded = onyx::CheckpointState::load(saved.string());
  OnyxPropertyType type{};
  int64_t epoch = 0;
  double best = 0;
  char* note = nullptr;
  onyx::check(onyx_checkpoint_get_property(reloaded.get(), "epoch", &type, &epoch, nullptr, nullptr));
  EXPECT_EQ(type, ONYX_PROPERTY_INT);
  EXPECT_EQ(epoch, 3);
  onyx::check(onyx_checkpoint_get_property(reloaded.get(), "best_loss", &type, nullptr, &best, nullptr));
  EXPECT_EQ(best, 0.25);
  onyx::check(onyx_checkpoint_get_property(reloaded.get(), "note", &type, nullptr, nullptr, &note));
  EXPECT_STREQ(note, "c api test");
  onyx_string_release(note);
  OnyxStatus* missing = onyx_checkpoint_get_property(reloaded.get(), "nothing", &type, nullptr, nullptr, nullptr);
  EXPECT_EQ(onyx_status_code(missing), ONYX_STATUS_NOT_FOUND);
  onyx_status_release(missing);

  // A session from buffers over the reloaded state continues from the trained weights.
  std::string training = read_bytes(art / "training.onnx"), eval = read_bytes(art / "eval.onnx"),
              optimizer = read_bytes(art / "optimizer.onnx");
  OnyxTrainingSession* raw = nullptr;
  onyx::check(onyx_training_session_create_from_buffers(env.get(), reloaded.get(), training.data(), training.size(),
                                                        eval.data(), eval.size(), optimizer.data(), optimizer.size(),
                                                        cpu_options().get(), &raw));
  auto [x, y] = batch_tensors(batches[0]);
  const OnyxTensor* inputs[] = {x.get(), y.get()};
  OnyxTensor* outputs[2] = {};
  onyx::check(onyx_training_session_eval_step(raw, inputs, 2, outputs, 2));
  onyx::Tensor eval_loss(outputs[0]), eval_logits(outputs[1]);
  EXPECT_LT(eval_loss.data<float>()[0], first);
  fs::path exported = tmp.path / "model.onnx";
  onyx::check(onyx_training_session_export_model(raw, exported.string().c_str(), nullptr, 0));
  onyx_training_session_release(raw);

  onyx::Session inference(env, exported.string(), cpu_options());
  ASSERT_EQ(inference.inputs().size(), 1u);
  auto logits = inference.run({{"x", &x}});
  for (int64_t i = 0; i < logits[0].size(); ++i) EXPECT_EQ(logits[0].data<float>()[i], eval_logits.data<float>()[i]);
}

TEST(TrainingCApi, NominalCheckpointRefusesTrainingUntilWeightsArrive) {
  TempDir tmp;
  std::string model = write_forward_model(tmp.path);
  fs::path art = tmp.path / "art";
  onyx::generate_artifacts(model, {{"optimizer", "adamw"}, {"optimizer_dir", ONYX_OPTIMIZER_DIR}, {"nominal", "1"}},
                           art.string());
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  auto state = onyx::CheckpointState::load((art / "checkpoint.ckpt").string());
  EXPECT_TRUE(state.nominal());
  onyx::TrainingSession session(env, state, (art / "training.onnx").string(), (art / "eval.onnx").string(),
                                (art / "optimizer.onnx").string(), cpu_options());
  auto batches = onyx::mlp_fixture::make_batches(1, 8, 2);
  auto [x, y] = batch_tensors(batches[0]);
  try {
    session.train_step({&x, &y});
    ADD_FAILURE() << "a nominal checkpoint trained";
  } catch (const onyx::Error& e) {
    EXPECT_EQ(e.code(), ONYX_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(std::string(e.what()).find("nominal"), std::string::npos) << e.what();
  }
  std::vector<unsigned char> weights(session.parameters_bytes());
  for (size_t i = 0; i < weights.size(); i += 4) {
    float v = 0.01f * float((i / 4) % 7);
    std::memcpy(&weights[i], &v, 4);
  }
  session.buffer_to_parameters(weights);
  EXPECT_FALSE(state.nominal());
  session.lazy_reset_grad();
  session.train_step({&x, &y});
  session.optimizer_step();
  EXPECT_NE(session.parameters_to_buffer(), weights);
}

TEST(TrainingCApi, ArtifactErrorsNameTheProblem) {
  TempDir tmp;
  std::string model = write_forward_model(tmp.path);
  auto expect_error = [&](std::vector<std::pair<std::string, std::string>> options, const std::string& needle) {
    try {
      onyx::generate_artifacts(model, options, (tmp.path / "art").string());
      ADD_FAILURE() << "no error; expected one containing " << needle;
    } catch (const onyx::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({{"requires_grad", "w7"}}, "'w7'");
  expect_error({{"loss", "hinge"}}, "hinge");
  expect_error({{"optimizer", "adagrad"}, {"optimizer_dir", ONYX_OPTIMIZER_DIR}}, "libonyx_optimizer_adagrad.so");
  expect_error({{"colour", "blue"}}, "colour");
}

}  // namespace

// Data parallelism through the C API on the loopback plugin (a job of one):
// a session that joined with ZeRO stage 1 and averages 2 accumulated
// micro-batches ends where a plain session with whole batches ends.
// (Several processes: tests/runtime/distributed.)
TEST(TrainingCApi, DataParallelJoinOnLoopbackMatchesOneProcess) {
  TempDir tmp;
  std::string model = write_forward_model(tmp.path);
  fs::path art = tmp.path / "art";
  onyx::generate_artifacts(model, {{"optimizer", "adamw"}, {"optimizer_dir", ONYX_OPTIMIZER_DIR}}, art.string());
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  auto plain_state = onyx::CheckpointState::load((art / "checkpoint.ckpt").string());
  auto zero_state = onyx::CheckpointState::load((art / "checkpoint.ckpt").string());
  auto session = [&](onyx::CheckpointState& state) {
    return onyx::TrainingSession(env, state, (art / "training.onnx").string(), "", (art / "optimizer.onnx").string(),
                                 cpu_options());
  };
  onyx::TrainingSession plain = session(plain_state), zero = session(zero_state);

  onyx::DistributedJob job("loopback");
  EXPECT_EQ(job.rank(), 0);
  EXPECT_EQ(job.size(), 1);
  try {
    zero.join(job, {{"zero_stage", "one"}});
    ADD_FAILURE() << "a bad option was accepted";
  } catch (const onyx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("zero_stage=one"), std::string::npos) << e.what();
  }
  zero.join(job, {{"zero_stage", "1"}, {"optimizer_dir", ONYX_OPTIMIZER_DIR}});
  zero.set_gradient_accumulation_mean(true);
  try {
    zero.join(job);  // would drop the sharded state
    ADD_FAILURE() << "a session joined a job twice";
  } catch (const onyx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("already belongs to a job"), std::string::npos) << e.what();
  }

  auto batches = onyx::mlp_fixture::make_batches(10, 8, 4);
  for (const Batch& b : batches) {
    auto [x, y] = batch_tensors(b);
    plain.lazy_reset_grad();
    plain.train_step({&x, &y});
    plain.optimizer_step();
    zero.lazy_reset_grad();
    for (int half = 0; half < 2; ++half) {
      Batch part;
      part.size = b.size / 2;
      part.x.assign(b.x.begin() + half * part.size * kIn, b.x.begin() + (half + 1) * part.size * kIn);
      part.labels.assign(b.labels.begin() + half * part.size, b.labels.begin() + (half + 1) * part.size);
      auto [px, py] = batch_tensors(part);
      zero.train_step({&px, &py});
    }
    zero.optimizer_step();
  }
  zero.gather_optimizer_state();
  auto a = plain.parameters_to_buffer(), b = zero.parameters_to_buffer();
  ASSERT_EQ(a.size(), b.size());
  const float* pa = reinterpret_cast<const float*>(a.data());
  const float* pb = reinterpret_cast<const float*>(b.data());
  for (size_t i = 0; i < a.size() / sizeof(float); ++i)
    ASSERT_NEAR(pb[i], pa[i], 1e-6 + 1e-5 * std::fabs(pa[i])) << "parameter element " << i;
  // The gathered optimizer state saves like any other: a plain session
  // resumed from it takes the same next AdamW step as the uninterrupted one
  // (with fresh moments it would not).
  zero_state.save((tmp.path / "zero.ckpt").string());
  auto reloaded = onyx::CheckpointState::load((tmp.path / "zero.ckpt").string());
  onyx::TrainingSession resumed = session(reloaded);
  auto [x, y] = batch_tensors(batches[0]);
  for (onyx::TrainingSession* s : {&plain, &resumed}) {
    s->lazy_reset_grad();
    s->train_step({&x, &y});
    s->optimizer_step();
  }
  a = plain.parameters_to_buffer();
  b = resumed.parameters_to_buffer();
  pa = reinterpret_cast<const float*>(a.data());
  pb = reinterpret_cast<const float*>(b.data());
  for (size_t i = 0; i < a.size() / sizeof(float); ++i)
    ASSERT_NEAR(pb[i], pa[i], 1e-6 + 1e-5 * std::fabs(pa[i])) << "after resuming, parameter element " << i;
  EXPECT_NE(job.counters().find("reduce_scatter 10 calls"), std::string::npos) << job.counters();

  try {
    onyx::DistributedJob missing("no_such_plugin");
    ADD_FAILURE() << "a missing collectives plugin was joined";
  } catch (const onyx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("libonyx_collectives_no_such_plugin.so"), std::string::npos) << e.what();
  }
}

// Mixed precision through the C API: the "precision" option (an unknown value
// is named), an fp16 session's loss scale and skipped steps, and the refusal
// of fp16 data parallelism.
TEST(TrainingCApi, PrecisionOptionAndLossScaling) {
  TempDir tmp;
  std::string model = write_forward_model(tmp.path);
  try {
    onyx::generate_artifacts(model, {{"precision", "fp8"}}, (tmp.path / "bad").string());
    ADD_FAILURE() << "precision fp8 was accepted";
  } catch (const onyx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("precision 'fp8' is not one of fp32, bf16, fp16"), std::string::npos)
        << e.what();
  }
  fs::path art = tmp.path / "art";
  onyx::generate_artifacts(model, {{"precision", "fp16"}, {"optimizer", "sgd"}, {"optimizer_dir", ONYX_OPTIMIZER_DIR}},
                           art.string());
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  auto state = onyx::CheckpointState::load((art / "checkpoint.ckpt").string());
  onyx::TrainingSession session(env, state, (art / "training.onnx").string(), (art / "eval.onnx").string(),
                                (art / "optimizer.onnx").string(), cpu_options());
  EXPECT_EQ(session.input_names(), (std::vector<std::string>{"x", "labels"}));  // loss_scale is the session's
  EXPECT_EQ(session.loss_scale(), 65536.0);
  session.set_loss_scaling(256, 1);
  auto batches = onyx::mlp_fixture::make_batches(2, 8, 1);
  Batch huge = batches[1];
  for (float& v : huge.x) v *= 1e6f;  // beyond float16's range: inf in the Gemm
  for (const Batch* b : {&batches[0], &huge}) {
    auto [x, labels] = batch_tensors(*b);
    session.lazy_reset_grad();
    session.train_step({&x, &labels});
    session.optimizer_step();
  }
  EXPECT_TRUE(session.last_step_skipped());
  EXPECT_EQ(session.loss_scale(), 256.0);  // doubled after the clean step (interval 1), halved by the overflow

  onyx::DistributedJob job("loopback");
  try {
    session.join(job);
    ADD_FAILURE() << "an fp16 session joined a data-parallel job";
  } catch (const onyx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fp16 training with dynamic loss scaling is not supported data-parallel"),
              std::string::npos)
        << e.what();
  }
}
