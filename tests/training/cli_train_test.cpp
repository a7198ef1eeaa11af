// `onyx artifacts`, `onyx train` and `onyx eval` as a user runs them, on a
// small synthetic IDX dataset written here (each class lights its own 7x7
// block of a 28x28 image, plus noise), so the run is fast and must learn.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_models.h"

namespace {

namespace fs = std::filesystem;
namespace tm = onyx::test_models;

struct Result {
  int status = -1;
  std::string output;
};

Result run(const std::string& args) {
  Result r;
  std::string command = std::string(ONYX_CLI) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

void put_u32(std::ofstream& out, uint32_t v) {
  unsigned char b[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
  out.write(reinterpret_cast<char*>(b), 4);
}

void write_idx(const fs::path& dir, const std::string& split, int count, uint64_t seed, int label_offset = 0) {
  tm::Rng rng(seed);
  std::ofstream images(dir / (split + "-images-idx3-ubyte"), std::ios::binary);
  std::ofstream labels(dir / (split + "-labels-idx1-ubyte"), std::ios::binary);
  put_u32(images, 0x803);
  put_u32(images, uint32_t(count));
  put_u32(images, 28);
  put_u32(images, 28);
  put_u32(labels, 0x801);
  put_u32(labels, uint32_t(count));
  for (int i = 0; i < count; ++i) {
    int label = int(rng.next() % 10);
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        bool lit = r / 7 == label / 4 && c / 7 == label % 4;
        images.put(char(uint8_t(lit ? 200 + rng.next() % 56 : rng.next() % 60)));
      }
    labels.put(char(uint8_t(label + label_offset)));
  }
}

struct Workspace {
  fs::path dir;
  Workspace() {
    dir = fs::temp_directory_path() / ("onyx_cli_train_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir / "data");
    tm::write_model(tm::build_mlp(tm::make_mlp_weights()), dir / "mlp.onnx");
  }
  ~Workspace() { fs::remove_all(dir); }
  std::string path(const std::string& p) const { return (dir / p).string(); }
};

TEST(CliTrain, TrainsWritesOutputsAndEvaluates) {
  Workspace w;
  write_idx(w.dir / "data", "train", 640, 1);
  write_idx(w.dir / "data", "t10k", 200, 2);
  Result train = run("train " + w.path("mlp.onnx") + " --data " + w.path("data") +
                     " --epochs 2 --batch-size 32 --lr 1e-3 --optimizer adamw --lr-schedule cosine --threads 2 --out " +
                     w.path("out"));
  ASSERT_EQ(train.status, 0) << train.output;
  EXPECT_NE(train.output.find("step 40/40 epoch 2/2"), std::string::npos) << train.output;
  EXPECT_NE(train.output.find("samples/s"), std::string::npos);
  std::ifstream csv(w.path("out/loss.csv"));
  int lines = 0;
  for (std::string line; std::getline(csv, line);) ++lines;
  EXPECT_EQ(lines, 41) << "a header and one row per step";
  std::ifstream svg(w.path("out/loss.svg"));
  std::string head;
  std::getline(svg, head);
  EXPECT_EQ(head.rfind("<svg", 0), 0u);
  EXPECT_TRUE(fs::exists(w.path("out/checkpoint.ckpt")));
  EXPECT_TRUE(fs::exists(w.path("out/artifacts/optimizer.onnx")));

  Result eval = run("eval " + w.path("out/model.onnx") + " --data " + w.path("data"));
  ASSERT_EQ(eval.status, 0) << eval.output;
  double accuracy = 0;
  ASSERT_EQ(std::sscanf(eval.output.c_str(), "accuracy: %lf%%", &accuracy), 1) << eval.output;
  EXPECT_GT(accuracy, 90.0) << "the synthetic classes are separable: " << eval.output;
}

TEST(CliTrain, ResumesFromACheckpointAndRefusesOneOfAnotherModel) {
  Workspace w;
  write_idx(w.dir / "data", "train", 320, 1);
  std::string common = " --data " + w.path("data") + " --batch-size 32 --max-steps 10 --optimizer adamw";
  Result first = run("train " + w.path("mlp.onnx") + common + " --out " + w.path("first"));
  ASSERT_EQ(first.status, 0) << first.output;
  Result resumed = run("train " + w.path("mlp.onnx") + common + " --resume " + w.path("first/checkpoint.ckpt") +
                       " --out " + w.path("second"));
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming from"), std::string::npos);
  auto first_loss = [](const std::string& csv_path) {
    std::ifstream csv(csv_path);
    std::string header, row;
    std::getline(csv, header);
    std::getline(csv, row);
    return std::stod(row.substr(row.find(',', row.find(',') + 1) + 1));
  };
  EXPECT_LT(first_loss(w.path("second/loss.csv")), first_loss(w.path("first/loss.csv")))
      << "the resumed run starts from the trained weights";

  // A checkpoint of another model: a clear error naming the parameter and both shapes.
  tm::write_model(tm::build_cnn(tm::make_cnn_weights()), w.dir / "cnn.onnx");
  Result art = run("artifacts " + w.path("cnn.onnx") + " --out " + w.path("cnn_art"));
  ASSERT_EQ(art.status, 0) << art.output;
  Result wrong = run("train " + w.path("mlp.onnx") + common + " --resume " + w.path("cnn_art/checkpoint.ckpt") +
                     " --out " + w.path("third"));
  EXPECT_EQ(wrong.status, 1);
  // Both models have fc1.weight; the CNN's is [64, 784], the MLP's [256, 784].
  EXPECT_NE(wrong.output.find("shape mismatch for parameter 'fc1.weight': the checkpoint has [64, 784] but the "
                              "training model expects [256, 784]"),
            std::string::npos) << wrong.output;
}

TEST(CliTrain, LabelsOutOfRangeAreAClearError) {
  Workspace w;
  write_idx(w.dir / "data", "train", 64, 1, /*label_offset=*/5);
  Result r = run("train " + w.path("mlp.onnx") + " --data " + w.path("data") + " --out " + w.path("out"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("outside the model's 10 classes"), std::string::npos) << r.output;
}

TEST(CliTrain, TruncatedDatasetNamesTheFile) {
  Workspace w;
  write_idx(w.dir / "data", "train", 64, 1);
  fs::resize_file(w.dir / "data" / "train-images-idx3-ubyte", 1000);
  Result r = run("train " + w.path("mlp.onnx") + " --data " + w.path("data") + " --out " + w.path("out"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("train-images-idx3-ubyte is truncated"), std::string::npos) << r.output;
}

TEST(CliArtifacts, UnknownParameterIsAClearError) {
  Workspace w;
  Result r = run("artifacts " + w.path("mlp.onnx") + " --requires-grad fc9.weight --out " + w.path("art"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("'fc9.weight'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(w.path("art/training.onnx")));
}

TEST(CliArtifacts, NominalCheckpointHasNoWeights) {
  Workspace w;
  Result r = run("artifacts " + w.path("mlp.onnx") + " --frozen fc3.bias --optimizer lamb --nominal --out " + w.path("art"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_LT(fs::file_size(w.path("art/checkpoint.ckpt")), 16384u) << "the MLP's weights are ~0.9 MB";
  Result full = run("artifacts " + w.path("mlp.onnx") + " --out " + w.path("full"));
  ASSERT_EQ(full.status, 0) << full.output;
  EXPECT_GT(fs::file_size(w.path("full/checkpoint.ckpt")), 900000u);
}

}  // namespace
