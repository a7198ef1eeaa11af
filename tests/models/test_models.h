// test_models.h: real ONNX test models with deterministic weights, and float64
// references of the same math, so tests can build a model in-process, run it,
// and check every output. `onyx_make_test_models DIR` writes the same models
// to files for the CLI and benchmarks.
//
// Weights and inputs are float32 (what the model stores); the references
// widen them to double exactly and compute in double, so a reference differs
// from the exact math only by double rounding (~1e-16 relative).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace onyx::test_models {

inline constexpr uint64_t kDefaultSeed = 20240611;

// splitmix64: a tiny PRNG that gives the same sequence on every platform
// (std:: distributions do not), so model files are reproducible bit for bit.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi), rounded to float.
  float uniform(double lo, double hi) { return float(lo + (hi - lo) * (double(next() >> 11) * 0x1.0p-53)); }
  std::vector<float> uniform_vector(size_t n, double lo, double hi) {
    std::vector<float> v(n);
    for (float& x : v) x = uniform(lo, hi);
    return v;
  }

 private:
  uint64_t state_;
};

// Gemm with transB = trans_b: y = x * (trans_b ? W^T : W) + bias.
struct Dense {
  int64_t in = 0, out = 0;
  bool trans_b = true;        // weight stored [out, in] when true, [in, out] when false
  std::vector<float> weight;
  std::vector<float> bias;    // [out]
  float weight_at(int64_t i, int64_t o) const { return trans_b ? weight[size_t(o * in + i)] : weight[size_t(i * out + o)]; }
};

// Conv with square kernel, stride 1, symmetric padding.
struct Conv2d {
  int64_t in_channels = 0, out_channels = 0, kernel = 3, pad = 1;
  std::vector<float> weight;  // [out, in, kernel, kernel]
  std::vector<float> bias;    // [out]
};

// Inference-mode BatchNormalization: y = (x - mean) / sqrt(var + epsilon) * scale + bias.
struct BatchNorm {
  std::vector<float> scale, bias, mean, var;
  float epsilon = 1e-5f;
};

// mlp.onnx: x [batch, 784] -> Gemm 256 + Relu -> Gemm 128 + Relu -> Gemm 10 -> logits.
struct MlpWeights {
  Dense fc1, fc2, fc3;
};

// cnn.onnx: x [batch, 1, 28, 28] -> Conv 8 + BN + Relu + MaxPool 2 -> Conv 16 + BN +
// Relu + MaxPool 2 -> Flatten (784) -> Gemm 64 + Relu -> Gemm 10 -> logits.
struct CnnWeights {
  Conv2d conv1, conv2;
  BatchNorm bn1, bn2;
  Dense fc1, fc2;
};

MlpWeights make_mlp_weights(uint64_t seed = kDefaultSeed);
CnnWeights make_cnn_weights(uint64_t seed = kDefaultSeed);

// Opset 17 models; input "x" with symbolic dim "batch", output "logits" [batch, 10].
onnx::ModelProto build_mlp(const MlpWeights& w);
onnx::ModelProto build_cnn(const CnnWeights& w);

// float64 references. x holds batch * 784 values (the same layout for both
// models: [batch, 784] or [batch, 1, 28, 28]); the result is [batch, 10] row-major.
std::vector<double> mlp_reference(const MlpWeights& w, std::span<const float> x, int64_t batch);
std::vector<double> cnn_reference(const CnnWeights& w, std::span<const float> x, int64_t batch);

// Inputs like normalized pixels: uniform in [0, 1).
std::vector<float> random_input(size_t count, uint64_t seed);

// add.onnx: y = x + w with x, y float32 [2, 3] and w a [2, 3] initializer
// (add_model_weight()). Small and fixed-shape, for error-path tests.
onnx::ModelProto build_add_model();
std::vector<float> add_model_weight();

// The add model with w stored in a side file at `location` (relative to the
// model's folder), `offset` bytes in. `side_file` receives the side file's
// bytes (filler, then w's raw float32 data).
onnx::ModelProto build_external_data_model(const std::string& location, int64_t offset, std::string* side_file);

// Serializes `model` to `path` (throws std::runtime_error on failure).
void write_model(const onnx::ModelProto& model, const std::filesystem::path& path);
void write_bytes(const std::string& bytes, const std::filesystem::path& path);

// Writes every test model into `dir`; returns the file names written.
std::vector<std::string> write_all_models(const std::filesystem::path& dir, uint64_t seed = kDefaultSeed);

}  // namespace onyx::test_models
