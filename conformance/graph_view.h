// graph_view.h: an ONNX graph as the ABI's OnyxGraphView, owning every
// string, array and constant it points at. Used to ask a plugin directly
// (get_capability, kernel_create) in the claims and abi suites.
#pragma once

#include <onyx_provider.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "values.h"

namespace onyx::conformance {

class OwnedGraph {
 public:
  // `opsets`: domain ("" for ai.onnx) -> the model's opset version.
  static std::unique_ptr<OwnedGraph> from_onnx(const onnx::GraphProto& graph,
                                               const std::map<std::string, int64_t>& opsets);

  const OnyxGraphView& view() const { return view_; }
  // A view of node `k` alone (same values array, one node).
  OnyxGraphView node_view(size_t k) const;
  size_t node_count() const { return nodes_.size(); }
  // Index of the value named `name`, or -1.
  int32_t value_index(const std::string& name) const;
  const HostTensor* constant(int32_t value) const;

 private:
  struct AttrStorage {
    std::string name, s;
    std::vector<float> floats;
    std::vector<int64_t> ints;
    std::vector<std::string> strings;
    std::vector<const char*> string_ptrs;
    HostTensor tensor;
    OnyxTensorView tensor_view{};
    std::unique_ptr<OwnedGraph> graph;
  };
  struct NodeStorage {
    std::string name, op_type, domain;
    std::vector<int32_t> inputs, outputs;
    std::vector<std::unique_ptr<AttrStorage>> attr_storage;
    std::vector<OnyxAttribute> attributes;
  };
  struct ValueStorage {
    std::string name;
    std::vector<int64_t> dims;
    std::unique_ptr<HostTensor> constant;
    OnyxTensorView constant_view{};
  };

  int32_t intern(const std::string& name);
  void fill_attribute(AttrStorage& storage, OnyxAttribute& attr, const onnx::AttributeProto& proto,
                      const std::map<std::string, int64_t>& opsets);

  std::map<std::string, int32_t> index_;
  std::vector<std::unique_ptr<ValueStorage>> value_storage_;
  std::vector<OnyxValueInfo> values_;
  std::vector<std::unique_ptr<NodeStorage>> node_storage_;
  std::vector<OnyxNodeView> nodes_;
  OnyxGraphView view_{};
};

}  // namespace onyx::conformance
