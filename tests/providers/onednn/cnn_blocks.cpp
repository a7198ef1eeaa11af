#include "cnn_blocks.h"

#include <cmath>
#include <string>
#include <vector>

#include "onednn_test_util.h"
#include "proto_builder.h"

namespace onyx::onednn_test {
namespace {

namespace tm = onyx::test_models;

class Builder {
 public:
  Builder(onnx::GraphProto& g, uint64_t seed) : g_(g), seed_(seed) {}

  // Conv (weights scaled so activations keep their size) + BatchNormalization.
  std::string conv_bn(const std::string& name, const std::string& x, int64_t in, int64_t out, int64_t kernel,
                      int64_t stride, int64_t group = 1) {
    int64_t fan_in = in / group * kernel * kernel;
    double bound = std::sqrt(6.0 / double(fan_in));  // He-uniform: activations keep their scale
    std::vector<float> w = random_floats(size_t(out * fan_in), ++seed_, -bound, bound);
    tm::add_initializer(g_, name + ".w", {out, in / group, kernel, kernel}, w);
    onnx::NodeProto& conv = tm::add_node(g_, "Conv", name, {x, name + ".w"}, {name + ".c"});
    tm::set_ints(conv, "kernel_shape", {kernel, kernel});
    tm::set_ints(conv, "strides", {stride, stride});
    int64_t pad = kernel / 2;
    tm::set_ints(conv, "pads", {pad, pad, pad, pad});
    if (group > 1) tm::set_int(conv, "group", group);
    tm::add_initializer(g_, name + ".scale", {out}, random_floats(size_t(out), ++seed_, 0.5, 1.5));
    tm::add_initializer(g_, name + ".shift", {out}, random_floats(size_t(out), ++seed_, -0.2, 0.2));
    tm::add_initializer(g_, name + ".mean", {out}, random_floats(size_t(out), ++seed_, -0.2, 0.2));
    tm::add_initializer(g_, name + ".var", {out}, random_floats(size_t(out), ++seed_, 0.5, 1.5));
    tm::add_node(g_, "BatchNormalization", name + ".bn",
                 {name + ".c", name + ".scale", name + ".shift", name + ".mean", name + ".var"}, {name + ".b"});
    return name + ".b";
  }
  std::string op(const std::string& type, const std::string& name, const std::vector<std::string>& inputs) {
    tm::add_node(g_, type, name, inputs, {name + ".y"});
    return name + ".y";
  }
  onnx::GraphProto& graph() { return g_; }
  uint64_t next_seed() { return ++seed_; }

 private:
  onnx::GraphProto& g_;
  uint64_t seed_;
};

}  // namespace

onnx::ModelProto build_residual_cnn(uint64_t seed) {
  onnx::ModelProto model = tm::new_model("residual_cnn");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "x", {std::string("N"), int64_t(3), int64_t(32), int64_t(32)});
  Builder b(g, seed);
  std::string x = b.op("Relu", "stem.relu", {b.conv_bn("stem", "x", 3, 16, 3, 1)});
  onnx::NodeProto& pool = tm::add_node(g, "MaxPool", "stem.pool", {x}, {"stem.pool.y"});
  tm::set_ints(pool, "kernel_shape", {3, 3});
  tm::set_ints(pool, "strides", {2, 2});
  tm::set_ints(pool, "pads", {1, 1, 1, 1});
  x = "stem.pool.y";  // [N, 16, 16, 16]
  // Basic block, identity shortcut.
  std::string a = b.op("Relu", "block1.relu1", {b.conv_bn("block1.conv1", x, 16, 16, 3, 1)});
  std::string sum = b.op("Add", "block1.add", {b.conv_bn("block1.conv2", a, 16, 16, 3, 1), x});
  x = b.op("Relu", "block1.relu2", {sum});
  // Basic block, strided, with a 1x1 convolution shortcut.
  a = b.op("Relu", "block2.relu1", {b.conv_bn("block2.conv1", x, 16, 32, 3, 2)});
  std::string main = b.conv_bn("block2.conv2", a, 32, 32, 3, 1);
  std::string shortcut = b.conv_bn("block2.down", x, 16, 32, 1, 2);
  x = b.op("Relu", "block2.relu2", {b.op("Add", "block2.add", {main, shortcut})});  // [N, 32, 8, 8]
  x = b.op("GlobalAveragePool", "gap", {x});
  x = b.op("Flatten", "flatten", {x});
  tm::add_initializer(g, "fc.w", {10, 32}, random_floats(320, b.next_seed(), -0.3, 0.3));
  tm::add_initializer(g, "fc.b", {10}, random_floats(10, b.next_seed()));
  onnx::NodeProto& fc = tm::add_node(g, "Gemm", "fc", {x, "fc.w", "fc.b"}, {"y"});
  tm::set_int(fc, "transB", 1);
  tm::add_output(g, "y", {std::string("N"), int64_t(10)});
  return model;
}

onnx::ModelProto build_inverted_residual(uint64_t seed) {
  onnx::ModelProto model = tm::new_model("inverted_residual");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "x", {std::string("N"), int64_t(8), int64_t(16), int64_t(16)});
  Builder b(g, seed);
  // Relu6 as torch.onnx.export writes it at opset 13: Clip with min/max
  // from Constant nodes (expand) or from initializers (depthwise).
  for (auto [name, value] : {std::pair{"six.lo", 0.f}, std::pair{"six.hi", 6.f}}) {
    onnx::NodeProto& c = tm::add_node(g, "Constant", name, {}, {name});
    onnx::AttributeProto* attr = c.add_attribute();
    attr->set_name("value");
    attr->set_type(onnx::AttributeProto::TENSOR);
    attr->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    attr->mutable_t()->add_float_data(value);
  }
  tm::add_initializer(g, "lo", {}, {0.f});
  tm::add_initializer(g, "hi", {}, {6.f});
  std::string e = b.op("Clip", "expand.relu6", {b.conv_bn("expand", "x", 8, 32, 1, 1), "six.lo", "six.hi"});
  std::string d = b.op("Clip", "dw.relu6", {b.conv_bn("dw", e, 32, 32, 3, 1, /*group=*/32), "lo", "hi"});
  std::string p = b.conv_bn("project", d, 32, 8, 1, 1);
  std::string sum = b.op("Add", "residual", {"x", p});
  onnx::NodeProto& pool = tm::add_node(g, "AveragePool", "pool", {sum}, {"y"});
  tm::set_ints(pool, "kernel_shape", {2, 2});
  tm::set_ints(pool, "strides", {2, 2});
  tm::add_output(g, "y", {std::string("N"), int64_t(8), int64_t(8), int64_t(8)});
  return model;
}

}  // namespace onyx::onednn_test
