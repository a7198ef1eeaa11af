// mlp_cnn.cpp: weights and graphs of the MLP and CNN test models.
#include <cmath>

#include "proto_builder.h"
#include "test_models.h"

namespace onyx::test_models {

namespace {

// He-uniform weights (bound sqrt(6 / fan_in)) keep activations O(1) through
// the ReLU layers, so outputs are neither vanishing nor huge and a relative
// comparison against the reference is meaningful.
Dense make_dense(Rng& rng, int64_t in, int64_t out, bool trans_b) {
  Dense d;
  d.in = in;
  d.out = out;
  d.trans_b = trans_b;
  double bound = std::sqrt(6.0 / double(in));
  d.weight = rng.uniform_vector(size_t(in * out), -bound, bound);
  d.bias = rng.uniform_vector(size_t(out), -0.1, 0.1);
  return d;
}

Conv2d make_conv(Rng& rng, int64_t in_channels, int64_t out_channels) {
  Conv2d c;
  c.in_channels = in_channels;
  c.out_channels = out_channels;
  c.kernel = 3;
  c.pad = 1;
  double bound = std::sqrt(6.0 / double(in_channels * 9));
  c.weight = rng.uniform_vector(size_t(out_channels * in_channels * 9), -bound, bound);
  c.bias = rng.uniform_vector(size_t(out_channels), -0.1, 0.1);
  return c;
}

// Statistics as a trained network would have them: variances away from zero
// (so 1/sqrt(var + eps) is well conditioned), scales near one.
BatchNorm make_batch_norm(Rng& rng, int64_t channels) {
  BatchNorm bn;
  bn.scale = rng.uniform_vector(size_t(channels), 0.8, 1.2);
  bn.bias = rng.uniform_vector(size_t(channels), -0.1, 0.1);
  bn.mean = rng.uniform_vector(size_t(channels), -0.1, 0.1);
  bn.var = rng.uniform_vector(size_t(channels), 0.5, 1.5);
  bn.epsilon = 1e-5f;
  return bn;
}

// Gemm node plus its weight and bias initializers; returns the output name
// (`output`, or "<name>.out" when empty).
std::string add_gemm(onnx::GraphProto& g, const std::string& name, const std::string& input, const Dense& d,
                     const std::string& output = "") {
  std::vector<int64_t> weight_dims = d.trans_b ? std::vector<int64_t>{d.out, d.in} : std::vector<int64_t>{d.in, d.out};
  add_initializer(g, name + ".weight", weight_dims, d.weight);
  add_initializer(g, name + ".bias", {d.out}, d.bias);
  std::string out = output.empty() ? name + ".out" : output;
  onnx::NodeProto& node = add_node(g, "Gemm", name, {input, name + ".weight", name + ".bias"}, {out});
  if (d.trans_b) set_int(node, "transB", 1);
  return out;
}

std::string add_relu(onnx::GraphProto& g, const std::string& name, const std::string& input) {
  add_node(g, "Relu", name, {input}, {name + ".out"});
  return name + ".out";
}

std::string add_conv(onnx::GraphProto& g, const std::string& name, const std::string& input, const Conv2d& c) {
  add_initializer(g, name + ".weight", {c.out_channels, c.in_channels, c.kernel, c.kernel}, c.weight);
  add_initializer(g, name + ".bias", {c.out_channels}, c.bias);
  onnx::NodeProto& node = add_node(g, "Conv", name, {input, name + ".weight", name + ".bias"}, {name + ".out"});
  set_ints(node, "kernel_shape", {c.kernel, c.kernel});
  set_ints(node, "pads", {c.pad, c.pad, c.pad, c.pad});
  set_ints(node, "strides", {1, 1});
  return name + ".out";
}

std::string add_batch_norm(onnx::GraphProto& g, const std::string& name, const std::string& input, const BatchNorm& bn) {
  int64_t channels = int64_t(bn.scale.size());
  add_initializer(g, name + ".scale", {channels}, bn.scale);
  add_initializer(g, name + ".bias", {channels}, bn.bias);
  add_initializer(g, name + ".mean", {channels}, bn.mean);
  add_initializer(g, name + ".var", {channels}, bn.var);
  onnx::NodeProto& node = add_node(g, "BatchNormalization", name,
                                   {input, name + ".scale", name + ".bias", name + ".mean", name + ".var"},
                                   {name + ".out"});
  set_float(node, "epsilon", bn.epsilon);
  return name + ".out";
}

std::string add_max_pool(onnx::GraphProto& g, const std::string& name, const std::string& input) {
  onnx::NodeProto& node = add_node(g, "MaxPool", name, {input}, {name + ".out"});
  set_ints(node, "kernel_shape", {2, 2});
  set_ints(node, "strides", {2, 2});
  return name + ".out";
}

}  // namespace

MlpWeights make_mlp_weights(uint64_t seed) {
  Rng rng(seed ^ 0x6D6C70);  // per-model salt: MLP and CNN draw different streams
  MlpWeights w;
  w.fc1 = make_dense(rng, 784, 256, true);
  w.fc2 = make_dense(rng, 256, 128, true);
  // The last layer stores its weight [in, out] (transB = 0) so that both Gemm
  // layouts a real exporter produces are exercised.
  w.fc3 = make_dense(rng, 128, 10, false);
  return w;
}

CnnWeights make_cnn_weights(uint64_t seed) {
  Rng rng(seed ^ 0x636E6E);
  CnnWeights w;
  w.conv1 = make_conv(rng, 1, 8);
  w.bn1 = make_batch_norm(rng, 8);
  w.conv2 = make_conv(rng, 8, 16);
  w.bn2 = make_batch_norm(rng, 16);
  w.fc1 = make_dense(rng, 16 * 7 * 7, 64, true);
  w.fc2 = make_dense(rng, 64, 10, true);
  return w;
}

onnx::ModelProto build_mlp(const MlpWeights& w) {
  onnx::ModelProto model = new_model("mlp");
  onnx::GraphProto& g = *model.mutable_graph();
  add_input(g, "x", {std::string("batch"), int64_t(784)});
  std::string h = add_relu(g, "relu1", add_gemm(g, "fc1", "x", w.fc1));
  h = add_relu(g, "relu2", add_gemm(g, "fc2", h, w.fc2));
  add_gemm(g, "fc3", h, w.fc3, "logits");
  add_output(g, "logits", {std::string("batch"), int64_t(10)});
  return model;
}

onnx::ModelProto build_cnn(const CnnWeights& w) {
  onnx::ModelProto model = new_model("cnn");
  onnx::GraphProto& g = *model.mutable_graph();
  add_input(g, "x", {std::string("batch"), int64_t(1), int64_t(28), int64_t(28)});
  std::string h = add_conv(g, "conv1", "x", w.conv1);
  h = add_max_pool(g, "pool1", add_relu(g, "relu1", add_batch_norm(g, "bn1", h, w.bn1)));
  h = add_conv(g, "conv2", h, w.conv2);
  h = add_max_pool(g, "pool2", add_relu(g, "relu2", add_batch_norm(g, "bn2", h, w.bn2)));
  onnx::NodeProto& flatten = add_node(g, "Flatten", "flatten", {h}, {"flatten.out"});
  set_int(flatten, "axis", 1);
  h = add_relu(g, "relu3", add_gemm(g, "fc1", "flatten.out", w.fc1));
  add_gemm(g, "fc2", h, w.fc2, "logits");
  add_output(g, "logits", {std::string("batch"), int64_t(10)});
  return model;
}

std::vector<float> random_input(size_t count, uint64_t seed) {
  Rng rng(seed);
  return rng.uniform_vector(count, 0.0, 1.0);
}

}  // namespace onyx::test_models
