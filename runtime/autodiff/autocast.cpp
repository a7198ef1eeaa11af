// autocast.cpp: see autocast.h.
#include "autodiff/autocast.h"

#include <algorithm>
#include <map>
#include <vector>

namespace onyx::runtime::autodiff {

namespace onnx = ONNX_NAMESPACE;

StatusOr<Precision> parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp16") return Precision::kFp16;
  return invalid_argument("precision '" + name + "' is not one of fp32, bf16, fp16");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    default: return "fp32";
  }
}

namespace {

bool autocast_op(const onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
  return std::find(kAutocastOps.begin(), kAutocastOps.end(), n.op_type()) != kAutocastOps.end();
}

bool is_float_type(int32_t t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::DOUBLE || t == onnx::TensorProto::FLOAT16 ||
         t == onnx::TensorProto::BFLOAT16;
}

// Mixing float32 with float64 (or already 16-bit) inputs is the model's own
// choice of precision: such nodes are left alone.
bool all_float_inputs_are_float32(const onnx::NodeProto& n, const Emitter& e) {
  for (const auto& i : n.input())
    if (!i.empty() && is_float_type(e.dtype(i)) && e.dtype(i) != onnx::TensorProto::FLOAT) return false;
  return true;
}

onnx::NodeProto cast_node(const std::string& name, const std::string& in, const std::string& out, int32_t to) {
  onnx::NodeProto n;
  n.set_op_type("Cast");
  n.set_name(name);
  n.add_input(in);
  n.add_output(out);
  *n.add_attribute() = attr_int("to", to);
  return n;
}

}  // namespace

StatusOr<int> autocast(onnx::GraphProto* g, Emitter& e, Precision p, int node_count) {
  if (p == Precision::kFp32) return 0;
  if (node_count < 0 || node_count > g->node_size())
    return internal_error("autocast: node count " + std::to_string(node_count) + " outside the graph's " +
                          std::to_string(g->node_size()) + " nodes");
  const int32_t half = p == Precision::kBf16 ? onnx::TensorProto::BFLOAT16 : onnx::TensorProto::FLOAT16;
  auto typed = [&](const std::string& value, const std::string& like, int32_t dtype) {
    ValueType t = e.type(like).value_or(ValueType{});
    t.dtype = dtype;
    e.set_type(value, t);
  };
  std::map<std::string, std::string> narrow;  // float32 value -> its 16-bit twin
  std::vector<onnx::NodeProto> nodes;
  int rewritten = 0;
  for (int i = 0; i < g->node_size(); ++i) {
    onnx::NodeProto n = g->node(i);
    if (i >= node_count || !autocast_op(n) || !all_float_inputs_are_float32(n, e)) {
      nodes.push_back(std::move(n));
      continue;
    }
    ++rewritten;
    for (auto& in : *n.mutable_input()) {
      if (in.empty() || e.dtype(in) != onnx::TensorProto::FLOAT) continue;
      auto [it, fresh] = narrow.emplace(in, "");
      if (fresh) {
        it->second = e.fresh("autocast");
        nodes.push_back(cast_node(e.fresh("autocast_in"), in, it->second, half));
        typed(it->second, in, half);
      }
      in = it->second;
    }
    std::vector<onnx::NodeProto> back;
    for (auto& out : *n.mutable_output()) {
      if (out.empty() || e.dtype(out) != onnx::TensorProto::FLOAT) continue;
      // The result keeps its name (consumers and graph outputs see float32);
      // the node now writes a 16-bit value that later autocast nodes reuse
      // instead of casting the float32 copy back down (exact either way).
      std::string result = e.fresh("autocast");
      typed(result, out, half);
      back.push_back(cast_node(e.fresh("autocast_out"), result, out, onnx::TensorProto::FLOAT));
      narrow[out] = result;
      out = result;
    }
    nodes.push_back(std::move(n));
    for (auto& b : back) nodes.push_back(std::move(b));
  }
  g->clear_node();
  for (auto& n : nodes) *g->add_node() = std::move(n);
  return rewritten;
}

}  // namespace onyx::runtime::autodiff
