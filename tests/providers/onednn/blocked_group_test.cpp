// Blocked-layout groups (providers/onednn/blocked_group.h): whole CNN blocks
// in the forms exporters write run as one oneDNN kernel, match the CPU
// provider, and in steady state run oneDNN's JIT convolution and pooling
// with no weight reorders (read from ONEDNN_VERBOSE; 2x2/2 max pooling
// without padding is the provider's own loop and runs no primitive).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cnn_blocks.h"
#include "onednn_test_util.h"
#include "proto_builder.h"

namespace onyx::onednn_test {
namespace {

namespace tm = onyx::test_models;

void expect_one_group(const std::string& report, std::initializer_list<const char*> nodes) {
  int group = node_fused_group(report, *nodes.begin());
  EXPECT_NE(group, 0) << report;
  for (const char* node : nodes) {
    EXPECT_EQ(node_fused_group(report, node), group) << node << "\n" << report;
    EXPECT_EQ(node_device(report, node), "onednn") << node;
  }
}

TEST(OnednnBlockedGroups, ResidualCnnRunsAsOneGroupAndMatchesCpu) {
  onnx::ModelProto model = build_residual_cnn(1);
  for (int64_t batch : {1, 3}) {  // one kernel, a plan per batch size
    std::string report = expect_same_as_cpu(
        model, {{"x", {batch, 3, 32, 32}, random_floats(size_t(batch * 3 * 32 * 32), 2)}}, "residual cnn");
    // (The session folds each BatchNormalization into its Conv before
    // partitioning; the provider folds any that remain itself.)
    expect_one_group(report, {"stem", "stem.relu", "stem.pool", "block1.conv1", "block1.conv2", "block1.add",
                              "block1.relu2", "block2.conv1", "block2.down", "block2.add", "block2.relu2", "gap"});
  }
}

// A batch runs in chunks of images, in parallel on the host's threads: 7
// images on 3 threads are chunks of 3, 3 and 1 (the last its own plan);
// 5 on 2 threads, 3 and 2.
TEST(OnednnBlockedGroups, BatchInChunksOnTheHostThreadsMatchesCpu) {
  expect_same_as_cpu(build_residual_cnn(1), {{"x", {7, 3, 32, 32}, random_floats(7 * 3 * 32 * 32, 7)}},
                     "residual cnn, 7 images, 3 threads", 3);
  expect_same_as_cpu(build_inverted_residual(2), {{"x", {5, 8, 16, 16}, random_floats(5 * 8 * 16 * 16, 8, -3, 3)}},
                     "inverted residual, 5 images, 2 threads", 2);
}

// With reduced precision allowed on a CPU with native bf16, a group's
// convolutions on >= 16 input channels read bf16 (the stem's 3 channels stay
// float32): the group stays one kernel, its output stays within bf16's
// tolerance of the CPU provider's (8 significant bits per product input:
// ~1e-2 of the output's scale, 3e-2 allowed, as in model_test.cpp) and
// differs from the float32 group's (so bf16 really ran).
TEST(OnednnBlockedGroups, WiderConvolutionsReadBf16WhenAllowed) {
  onyx::Env env;
  if (env.providers_json().find("native bf16") == std::string::npos) GTEST_SKIP() << "this CPU has no native bf16";
  onnx::ModelProto model = build_residual_cnn(1);
  onyx::Tensor x = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {2, 3, 32, 32}, random_floats(2 * 3 * 32 * 32, 9));
  onyx::Session bf16 = make_session(env, model, onednn_then_cpu({{"allow_reduced_precision", "1"}}));
  onyx::Session f32 = make_session(env, model, onednn_then_cpu());
  onyx::Session cpu = make_session(env, model, cpu_only());
  auto output = [&](onyx::Session& s) {
    std::vector<onyx::Tensor> out = s.run({{"x", &x}});
    return tensor_values(out[0]);
  };
  const std::vector<double> got = output(bf16), full = output(f32), want = output(cpu);
  auto error = [](const std::vector<double>& a, const std::vector<double>& b) {
    double scale = 0, err = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      scale = std::max(scale, std::fabs(b[i]));
      err = std::max(err, std::fabs(a[i] - b[i]));
    }
    return err / std::max(scale, 1e-3);
  };
  ASSERT_EQ(got.size(), want.size());
  std::printf("[ accuracy ] residual cnn, bf16 group: normalized error vs cpu %.3g (tolerance 3e-2), vs float32 "
              "group %.3g\n", error(got, want), error(got, full));
  EXPECT_LE(error(got, want), 3e-2);
  EXPECT_GT(error(got, full), 1e-5) << "allow_reduced_precision=1 changed nothing";
  expect_one_group(bf16.partition_report(), {"stem", "block1.conv1", "block2.conv2", "block2.down", "gap"});
}

TEST(OnednnBlockedGroups, InvertedResidualWithRelu6AsClipMatchesCpu) {
  std::string report = expect_same_as_cpu(build_inverted_residual(2),
                                          {{"x", {2, 8, 16, 16}, random_floats(2 * 8 * 16 * 16, 3, -3, 3)}},
                                          "inverted residual");
  // Clip's bounds from Constant nodes and from initializers alike.
  expect_one_group(report, {"expand", "expand.relu6", "dw", "dw.relu6", "project", "residual", "pool"});
}

// The group's input comes from, and its output goes to, nodes the CPU
// provider runs (oneDNN's softplus and log are declined for accuracy):
// reordered at both edges.
TEST(OnednnBlockedGroups, GroupBetweenNodesOfAnotherDevice) {
  onnx::ModelProto model = tm::new_model("between");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "x", {int64_t(2), int64_t(8), int64_t(12), int64_t(10)});
  tm::add_node(g, "Softplus", "in", {"x"}, {"t"});
  tm::add_initializer(g, "w", {16, 8, 3, 3}, random_floats(16 * 8 * 9, 4, -0.2, 0.2));
  tm::add_initializer(g, "b", {16}, random_floats(16, 5));
  tm::set_ints(tm::add_node(g, "Conv", "conv", {"t", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
  tm::add_node(g, "Relu", "relu", {"c"}, {"r"});
  tm::set_ints(tm::add_node(g, "MaxPool", "pool", {"r"}, {"p"}), "kernel_shape", {2, 2});
  tm::add_node(g, "Sigmoid", "gate", {"p"}, {"s"});
  tm::add_node(g, "Log", "out", {"s"}, {"y"});
  tm::add_output(g, "y", {int64_t(2), int64_t(16), int64_t(11), int64_t(9)});
  tm::add_output(g, "p", {int64_t(2), int64_t(16), int64_t(11), int64_t(9)});
  std::string report =
      expect_same_as_cpu(model, {{"x", {2, 8, 12, 10}, random_floats(2 * 8 * 12 * 10, 6)}}, "between cpu nodes");
  expect_one_group(report, {"conv", "relu", "pool"});
  // "p" is also a graph output, so it cannot pass inside a group to the gate.
  EXPECT_EQ(node_fused_group(report, "gate"), 0);
  EXPECT_EQ(node_device(report, "gate"), "onednn");
  EXPECT_EQ(node_device(report, "in"), "cpu");
  EXPECT_EQ(node_device(report, "out"), "cpu");
}

// Channels that are not a multiple of the block (5 in blocks of 8) leave a
// padded tail in each block; a standalone activation turns its zeros into
// 1/0 = inf, which must not reach the next convolution's sums (oneDNN zeroes
// the tail of each output).
TEST(OnednnBlockedGroups, PaddedChannelBlocksStayZero) {
  onnx::ModelProto model = tm::new_model("padded");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "x", {int64_t(2), int64_t(3), int64_t(10), int64_t(10)});
  tm::add_initializer(g, "w1", {5, 3, 3, 3}, random_floats(5 * 3 * 9, 7, -0.5, 0.5));
  tm::add_initializer(g, "b1", {5}, random_floats(5, 8, 2.0, 3.0));
  tm::set_ints(tm::add_node(g, "Conv", "conv1", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1});
  tm::set_ints(tm::add_node(g, "MaxPool", "pool", {"c1"}, {"p"}), "kernel_shape", {2, 2});
  tm::add_node(g, "Reciprocal", "reciprocal", {"p"}, {"r"});
  tm::add_initializer(g, "w2", {4, 5, 1, 1}, random_floats(4 * 5, 9));
  tm::add_node(g, "Conv", "conv2", {"r", "w2"}, {"y"});
  tm::add_output(g, "y", {int64_t(2), int64_t(4), int64_t(9), int64_t(9)});
  std::string report =
      expect_same_as_cpu(model, {{"x", {2, 3, 10, 10}, random_floats(2 * 3 * 10 * 10, 10)}}, "padded channel blocks");
  expect_one_group(report, {"conv1", "pool", "reciprocal", "conv2"});
}

// Max pooling 2x2/2 inside a group runs the provider's own loop over the
// blocked layout: odd sizes (the last row and column dropped) and channels
// padded to the block, against the CPU provider; then 2x2/2 with padding,
// which stays oneDNN's.
TEST(OnednnBlockedGroups, MaxPool2x2OnBlockedLayout) {
  onnx::ModelProto model = tm::new_model("maxpool2x2");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "x", {int64_t(3), int64_t(3), int64_t(11), int64_t(9)});
  tm::add_initializer(g, "w1", {13, 3, 3, 3}, random_floats(13 * 3 * 9, 11, -0.5, 0.5));
  tm::set_ints(tm::add_node(g, "Conv", "conv1", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
  onnx::NodeProto& pool = tm::add_node(g, "MaxPool", "pool", {"c1"}, {"p"});
  tm::set_ints(pool, "kernel_shape", {2, 2});
  tm::set_ints(pool, "strides", {2, 2});  // [3, 13, 5, 4]
  onnx::NodeProto& padded = tm::add_node(g, "MaxPool", "padded_pool", {"p"}, {"q"});
  tm::set_ints(padded, "kernel_shape", {2, 2});
  tm::set_ints(padded, "strides", {2, 2});
  tm::set_ints(padded, "pads", {1, 1, 1, 1});  // [3, 13, 3, 3]
  tm::add_initializer(g, "w2", {4, 13, 1, 1}, random_floats(4 * 13, 12));
  tm::add_node(g, "Conv", "conv2", {"q", "w2"}, {"y"});
  tm::add_output(g, "y", {int64_t(3), int64_t(4), int64_t(3), int64_t(3)});
  std::string report =
      expect_same_as_cpu(model, {{"x", {3, 3, 11, 9}, random_floats(3 * 3 * 11 * 9, 13)}}, "max pool 2x2");
  expect_one_group(report, {"conv1", "pool", "padded_pool", "conv2"});
}

// The lines oneDNN printed after the probe's steady-state marker.
std::vector<std::string> steady_state_verbose_lines() {
  FILE* pipe = popen("ONEDNN_VERBOSE=1 " ONYX_ONEDNN_PROBE, "r");
  if (!pipe) return {};
  std::vector<std::string> lines;
  bool steady = false;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe)) {
    std::string line(buffer);
    if (line.starts_with("ONYX_STEADY_STATE")) steady = true;
    // oneDNN 2.6 writes "onednn_verbose,", older releases "dnnl_verbose,".
    else if (steady && line.find("_verbose,exec,") != std::string::npos) lines.push_back(line);
  }
  EXPECT_EQ(pclose(pipe), 0);
  return lines;
}

std::vector<std::string> csv(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  return fields;
}

// A weights layout blocks the output-channel dim ('A' in oneDNN's tags);
// activations never do on these CPUs (at most the channel dim, 'B').
bool is_weight_reorder(const std::string& memory_descs) {
  size_t dst = memory_descs.find("dst_");
  size_t at = dst == std::string::npos ? dst : memory_descs.find("::blocked:", dst);
  if (at == std::string::npos) return false;
  at += 10;
  std::string tag = memory_descs.substr(at, memory_descs.find(':', at) - at);
  return tag.find('A') != std::string::npos;
}

TEST(OnednnBlockedGroups, SteadyStateRunsJitConvolutionAndPoolingWithoutWeightReorders) {
  std::vector<std::string> lines = steady_state_verbose_lines();
  ASSERT_FALSE(lines.empty()) << "no ONEDNN_VERBOSE output from " ONYX_ONEDNN_PROBE;
  int convolutions = 0, poolings = 0;
  for (const std::string& line : lines) {
    std::vector<std::string> f = csv(line);  // onednn_verbose,exec,cpu,primitive,implementation,prop,mds,...
    ASSERT_GE(f.size(), 7u) << line;
    const std::string &primitive = f[3], &impl = f[4];
    if (primitive == "convolution") {
      ++convolutions;
      // jit:* (AVX2) or the batch-reduce kernels oneDNN prefers on AVX-512
      // (brgconv*, brdgmm_dw*): both generated code for the ISA, never the
      // im2col gemm:* path.
      const bool generated = impl.starts_with("jit") || impl.starts_with("brg") || impl.starts_with("brdgmm");
      EXPECT_TRUE(generated && impl.find("gemm") == std::string::npos) << line;
    }
    if (primitive.starts_with("pooling")) {
      ++poolings;
      EXPECT_TRUE(impl.starts_with("jit")) << line;
    }
    EXPECT_TRUE(impl.find("simple_") == std::string::npos && !impl.starts_with("ref")) << line;
    if (primitive == "reorder") {
      EXPECT_FALSE(is_weight_reorder(f[6])) << "a weight reorder in steady state: " << line;
    }
  }
  // 3 runs of 6 + 3 convolutions and 2 + 1 poolings, each group once per
  // chunk of images it runs in (one or more): three convolutions a pooling.
  EXPECT_GE(poolings, 3 * 3);
  EXPECT_EQ(convolutions, 3 * poolings);
}

}  // namespace
}  // namespace onyx::onednn_test
