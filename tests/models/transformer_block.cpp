#include "transformer_block.h"

#include <cmath>
#include <string>

#include "proto_builder.h"
#include "test_models.h"

namespace onyx::test_models {


onnx::ModelProto build_transformer_block(int64_t seq, int64_t dim, uint64_t seed) {
  onnx::ModelProto model = new_model("transformer_block");
  model.mutable_opset_import(0)->set_version(20);  // Gelu
  onnx::GraphProto& g = *model.mutable_graph();
  Rng rng(seed);
  // Weights ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) keep activations O(1).
  auto weight = [&](const std::string& name, int64_t in, int64_t out) {
    double bound = 1.0 / std::sqrt(double(in));
    add_initializer(g, name, {in, out}, rng.uniform_vector(size_t(in * out), -bound, bound));
    return name;
  };
  auto vector = [&](const std::string& name, int64_t n, double lo, double hi) {
    add_initializer(g, name, {n}, rng.uniform_vector(size_t(n), lo, hi));
    return name;
  };
  auto linear = [&](const std::string& name, const std::string& input, int64_t in, int64_t out) {
    add_node(g, "MatMul", name + ".matmul", {input, weight(name + ".weight", in, out)}, {name + ".mm"});
    add_node(g, "Add", name + ".add", {name + ".mm", vector(name + ".bias", out, -0.1, 0.1)}, {name + ".out"});
    return name + ".out";
  };
  auto layer_norm = [&](const std::string& name, const std::string& input) {
    onnx::NodeProto& n = add_node(
        g, "LayerNormalization", name,
        {input, vector(name + ".scale", dim, 0.8, 1.2), vector(name + ".bias", dim, -0.1, 0.1)}, {name + ".out"});
    set_int(n, "axis", -1);
    return name + ".out";
  };
  add_input(g, "x", {std::string("batch"), seq, dim});
  std::string a = layer_norm("ln1", "x");
  std::string q = linear("q", a, dim, dim), k = linear("k", a, dim, dim), v = linear("v", a, dim, dim);
  set_ints(add_node(g, "Transpose", "k_t", {k}, {"k_t.out"}), "perm", {0, 2, 1});
  add_node(g, "MatMul", "scores", {q, "k_t.out"}, {"scores.out"});
  add_initializer(g, "scale", {}, {float(1.0 / std::sqrt(double(dim)))});
  add_node(g, "Mul", "scaled", {"scores.out", "scale"}, {"scaled.out"});
  set_int(add_node(g, "Softmax", "softmax", {"scaled.out"}, {"softmax.out"}), "axis", -1);
  add_node(g, "MatMul", "attention", {"softmax.out", v}, {"attention.out"});
  std::string o = linear("o", "attention.out", dim, dim);
  add_node(g, "Add", "residual1", {"x", o}, {"h"});
  std::string f = linear("ff1", layer_norm("ln2", "h"), dim, 4 * dim);
  add_node(g, "Gelu", "gelu", {f}, {"gelu.out"});
  std::string f2 = linear("ff2", "gelu.out", 4 * dim, dim);
  add_node(g, "Add", "residual2", {"h", f2}, {"y"});
  add_output(g, "y", {std::string("batch"), seq, dim});
  return model;
}

}  // namespace onyx::test_models
