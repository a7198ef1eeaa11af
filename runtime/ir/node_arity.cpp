#include "ir/node_arity.h"

#include <onnx/defs/schema.h>

#include <limits>

namespace onyx::runtime::ir {

namespace pb = ONNX_NAMESPACE;

namespace {

std::string range(int lo, int hi) {
  if (lo == hi) return std::to_string(lo);
  if (hi == std::numeric_limits<int>::max()) return "at least " + std::to_string(lo);
  return std::to_string(lo) + " to " + std::to_string(hi);
}

std::string counted(size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

}  // namespace

Status check_node_arity(const Node& node, int64_t opset, const std::string& scope) {
  const auto& known = pb::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = known.find(node.domain);
  if (it == known.end() || opset < 1 || opset > it->second.second) return Status();
  const pb::OpSchema* schema = pb::OpSchemaRegistry::Schema(node.op_type, int(opset), node.domain);
  if (!schema) return Status();  // an op the schemas do not know: partitioning names it
  const std::string where = scope + ": node " + node.describe() + " (" + node.op_type + "-" +
                            std::to_string(schema->since_version()) + ")";
  const size_t inputs = node.inputs.size(), outputs = node.outputs.size();
  if (int64_t(inputs) < schema->min_input() || int64_t(inputs) > schema->max_input())
    return invalid_argument(where + " has " + counted(inputs, "input") + "; the ONNX schema takes " +
                            range(schema->min_input(), schema->max_input()));
  if (int64_t(outputs) < schema->min_output() || int64_t(outputs) > schema->max_output())
    return invalid_argument(where + " has " + counted(outputs, "output") + "; the ONNX schema gives " +
                            range(schema->min_output(), schema->max_output()));
  // A required (Single) input named "" is as missing as one not written.
  const auto& formal = schema->inputs();
  for (size_t k = 0; k < inputs && k < formal.size(); ++k)
    if (node.inputs[k] == kNoValue && formal[k].GetOption() == pb::OpSchema::Single)
      return invalid_argument(where + " leaves required input " + std::to_string(k) + " ('" +
                              formal[k].GetName() + "') empty");
  return Status();
}

}  // namespace onyx::runtime::ir
