// rules.h: gradient rules. A rule reads one forward node and the gradients
// of its outputs and emits the nodes that compute its inputs' gradients,
// as ordinary ONNX ops (or ai.onyx ops with CPU kernels), so the backward
// graph is partitioned, planned and run like any other graph.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autodiff/emitter.h"
#include "core/status.h"

namespace onyx::runtime::autodiff {

class GradContext {
 public:
  GradContext(const ONNX_NAMESPACE::NodeProto& node, Emitter& e, std::vector<std::string> output_grads,
              std::vector<bool> input_needs_grad)
      : node_(node), e_(e), dy_(std::move(output_grads)), needs_(std::move(input_needs_grad)),
        dx_(size_t(node.input_size())) {}

  const ONNX_NAMESPACE::NodeProto& node() const { return node_; }
  Emitter& e() { return e_; }
  // Input / output k's name; "" when absent.
  std::string x(int k) const { return k < node_.input_size() ? node_.input(k) : ""; }
  std::string y(int k) const { return k < node_.output_size() ? node_.output(k) : ""; }
  int input_count() const { return node_.input_size(); }
  int output_count() const { return node_.output_size(); }
  // The gradient of output k; "" when no gradient reaches it.
  std::string dy(int k) const { return size_t(k) < dy_.size() ? dy_[size_t(k)] : ""; }
  // dy(k), or zeros shaped like output k when none reaches it.
  std::string dy_or_zeros(int k);
  bool needs(int k) const { return size_t(k) < needs_.size() && needs_[size_t(k)]; }
  void set_dx(int k, const std::string& grad);
  const std::vector<std::string>& dx() const { return dx_; }

  // Attributes of the forward node.
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  // Copies of the named attributes that the forward node has.
  std::vector<ONNX_NAMESPACE::AttributeProto> attrs(const std::vector<std::string>& names) const;

  // The rank of value `name`, or an error naming the node when unknown.
  StatusOr<int> rank_of(const std::string& name) const;
  // The constant int64/int32 values of input k (an initializer or Constant),
  // or an error naming the node when it is not constant.
  StatusOr<std::vector<int64_t>> constant_ints(int k) const;
  // "<op> node '<name>'" for messages.
  std::string label() const;

  // Filled by the builder: constant tensors of the graph, by value name.
  const std::map<std::string, const ONNX_NAMESPACE::TensorProto*>* constants = nullptr;

 private:
  const ONNX_NAMESPACE::NodeProto& node_;
  Emitter& e_;
  std::vector<std::string> dy_;
  std::vector<bool> needs_;
  std::vector<std::string> dx_;
};

using GradRule = std::function<Status(GradContext&)>;

// Rule tables, one per op family (rules_*.cpp); key: op type (ai.onnx) or
// "ai.onyx::<op>".
using RuleTable = std::map<std::string, GradRule>;
void add_elementwise_rules(RuleTable& table);
void add_activation_rules(RuleTable& table);
void add_linalg_rules(RuleTable& table);
void add_shape_rules(RuleTable& table);
void add_reduce_rules(RuleTable& table);
void add_nn_rules(RuleTable& table);
void add_norm_rules(RuleTable& table);
void add_attention_rules(RuleTable& table);
void add_loss_rules(RuleTable& table);

// All rules (built once).
const RuleTable& gradient_rules();
std::string rule_key(const ONNX_NAMESPACE::NodeProto& node);

}  // namespace onyx::runtime::autodiff
