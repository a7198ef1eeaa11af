// The autodiff's gradient ops (ai.onyx ConvGrad, MaxPoolGrad,
// AveragePoolGrad) on the oneDNN provider's backward primitives, against the
// CPU provider's kernels of the same ops (themselves checked against float64
// finite differences in tests/runtime/autodiff).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "onednn_test_util.h"
#include "proto_builder.h"
#include "test_models.h"

namespace onyx::onednn_test {
namespace {

namespace tm = onyx::test_models;

// Both sides sum the same float32 products in different orders (im2col+GEMM
// against oneDNN's direct kernels): ~1e-6 of the output's scale. 1e-4 is
// far below what a wrong window, padding or group gives (>= 1e-2).
constexpr double kTolerance = 1e-4;

onnx::ModelProto grad_model(const char* name) {
  onnx::ModelProto model = tm::new_model(name);
  onnx::OperatorSetIdProto* onyx = model.add_opset_import();
  onyx->set_domain("ai.onyx");
  onyx->set_version(1);
  return model;
}

void add_int64_initializer(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(int64_t(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

struct Feed {
  std::string name;
  std::vector<int64_t> dims;
};

// Runs `model` on onednn-then-cpu and on cpu only with random inputs; checks
// that node "grad" ran on onednn and that every output matches.
void expect_onednn_matches_cpu(const onnx::ModelProto& model, const std::vector<Feed>& feeds, const char* label) {
  onyx::Env env;
  onyx::Session onednn = make_session(env, model, onednn_then_cpu());
  onyx::Session cpu = make_session(env, model, cpu_only());
  EXPECT_EQ(node_device(onednn.partition_report(), "grad"), "onednn") << onednn.partition_report();
  std::vector<onyx::Tensor> tensors;
  uint64_t seed = 30;
  for (const Feed& f : feeds) {
    size_t n = 1;
    for (int64_t d : f.dims) n *= size_t(d);
    tensors.push_back(onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, f.dims, random_floats(n, seed++)));
  }
  std::vector<std::pair<std::string, const onyx::Tensor*>> inputs;
  for (size_t k = 0; k < feeds.size(); ++k) inputs.push_back({feeds[k].name, &tensors[k]});
  std::vector<onyx::Tensor> got = onednn.run(inputs), want = cpu.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].shape(), want[k].shape()) << label;
    std::vector<double> a = tensor_values(got[k]), b = tensor_values(want[k]);
    ASSERT_EQ(a.size(), b.size());
    double scale = 0, err = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      scale = std::max(scale, std::fabs(b[i]));
      double e = std::fabs(a[i] - b[i]);
      err = std::isnan(e) ? INFINITY : std::max(err, e);
    }
    double normalized = err / std::max(scale, 1e-3);
    std::printf("[ accuracy ] %s output %zu: normalized error vs cpu %.3g (tolerance %.0e)\n", label, k, normalized,
                kTolerance);
    EXPECT_GT(scale, 0.1) << label << ": degenerate output";
    EXPECT_LE(normalized, kTolerance) << label << " output " << k;
  }
}

TEST(OnednnGradients, ConvGradGroupedStridedDilatedPadded) {
  onnx::ModelProto model = grad_model("conv_grad");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "dy", {int64_t(2), int64_t(6), int64_t(5), int64_t(6)});
  tm::add_input(g, "x", {int64_t(2), int64_t(4), int64_t(9), int64_t(8)});
  tm::add_input(g, "w", {int64_t(6), int64_t(2), int64_t(3), int64_t(3)});
  onnx::NodeProto& n = tm::add_node(g, "ConvGrad", "grad", {"dy", "x", "w"}, {"dx", "dw"});
  n.set_domain("ai.onyx");
  tm::set_int(n, "group", 2);
  tm::set_ints(n, "strides", {2, 1});
  tm::set_ints(n, "dilations", {1, 2});
  tm::set_ints(n, "pads", {1, 1, 1, 1});
  tm::set_ints(n, "kernel_shape", {3, 3});
  tm::add_output(g, "dx", {int64_t(2), int64_t(4), int64_t(9), int64_t(8)});
  tm::add_output(g, "dw", {int64_t(6), int64_t(2), int64_t(3), int64_t(3)});
  expect_onednn_matches_cpu(model, {{"dy", {2, 6, 5, 6}}, {"x", {2, 4, 9, 8}}, {"w", {6, 2, 3, 3}}}, "ConvGrad");
}

// The ConvTranspose rule asks only for dW.
TEST(OnednnGradients, ConvGradWeightsOnly) {
  onnx::ModelProto model = grad_model("conv_grad_dw");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "dy", {int64_t(3), int64_t(5), int64_t(6), int64_t(6)});
  tm::add_input(g, "x", {int64_t(3), int64_t(2), int64_t(6), int64_t(6)});
  tm::add_input(g, "w", {int64_t(5), int64_t(2), int64_t(3), int64_t(3)});
  onnx::NodeProto& n = tm::add_node(g, "ConvGrad", "grad", {"dy", "x", "w"}, {"", "dw"});
  n.set_domain("ai.onyx");
  tm::set_ints(n, "pads", {1, 1, 1, 1});
  tm::add_output(g, "dw", {int64_t(5), int64_t(2), int64_t(3), int64_t(3)});
  expect_onednn_matches_cpu(model, {{"dy", {3, 5, 6, 6}}, {"x", {3, 2, 6, 6}}, {"w", {5, 2, 3, 3}}}, "ConvGrad dW");
}

TEST(OnednnGradients, MaxPoolGradPadded) {
  onnx::ModelProto model = grad_model("max_pool_grad");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "dy", {int64_t(2), int64_t(3), int64_t(4), int64_t(4)});
  tm::add_input(g, "x", {int64_t(2), int64_t(3), int64_t(7), int64_t(7)});
  onnx::NodeProto& n = tm::add_node(g, "MaxPoolGrad", "grad", {"dy", "x"}, {"dx"});
  n.set_domain("ai.onyx");
  tm::set_ints(n, "kernel_shape", {3, 3});
  tm::set_ints(n, "strides", {2, 2});
  tm::set_ints(n, "pads", {1, 1, 1, 1});
  tm::add_output(g, "dx", {int64_t(2), int64_t(3), int64_t(7), int64_t(7)});
  expect_onednn_matches_cpu(model, {{"dy", {2, 3, 4, 4}}, {"x", {2, 3, 7, 7}}}, "MaxPoolGrad");
}

TEST(OnednnGradients, AveragePoolGradExcludingAndIncludingPadding) {
  for (int include : {0, 1}) {
    onnx::ModelProto model = grad_model("average_pool_grad");
    onnx::GraphProto& g = *model.mutable_graph();
    tm::add_input(g, "dy", {int64_t(2), int64_t(3), int64_t(4), int64_t(4)});
    add_int64_initializer(g, "shape", {2, 3, 7, 7});
    onnx::NodeProto& n = tm::add_node(g, "AveragePoolGrad", "grad", {"dy", "shape"}, {"dx"});
    n.set_domain("ai.onyx");
    tm::set_ints(n, "kernel_shape", {3, 3});
    tm::set_ints(n, "strides", {2, 2});
    tm::set_ints(n, "pads", {1, 1, 1, 1});
    tm::set_int(n, "count_include_pad", include);
    tm::add_output(g, "dx", {int64_t(2), int64_t(3), int64_t(7), int64_t(7)});
    expect_onednn_matches_cpu(model, {{"dy", {2, 3, 4, 4}}},
                              include ? "AveragePoolGrad count_include_pad=1" : "AveragePoolGrad count_include_pad=0");
  }
}

}  // namespace
}  // namespace onyx::onednn_test
