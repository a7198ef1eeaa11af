// sdk/node_info.hpp: NodeInfo, one node of a graph view as C++ values
// (attributes, input and output types and shapes, constant inputs), with
// typed attribute getters. Kernel predicates and factories take a NodeInfo.
//
// Constants: a NodeInfo built with Constants::kBorrow points into the host's
// graph view (valid only during the ABI call that passed the view: use it in
// get_capability, where copying every weight of every node would be waste);
// one built with Constants::kCopy owns copies (use it to create kernels,
// which may keep constants). Copying a NodeInfo copies what it holds: a copy
// of a borrowing NodeInfo borrows too.
#pragma once

#include <onyx_provider.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dtype.hpp"
#include "status.hpp"

namespace onyx::sdk {

enum class Constants { kCopy, kBorrow };

// The bytes of a constant: borrowed from the graph view or owned. Writing
// through data() or resize() makes a borrowed buffer an owned copy first.
class ConstantBytes {
 public:
  ConstantBytes() = default;
  static ConstantBytes borrow(const void* data, size_t size) {
    ConstantBytes b;
    b.borrowed_ = static_cast<const unsigned char*>(data);
    b.borrowed_size_ = size;
    return b;
  }
  static ConstantBytes copy(const void* data, size_t size) {
    ConstantBytes b;
    if (size) b.owned_.assign(static_cast<const unsigned char*>(data),
                              static_cast<const unsigned char*>(data) + size);
    return b;
  }

  const unsigned char* data() const { return borrowed_ ? borrowed_ : owned_.data(); }
  unsigned char* data() { return own().data(); }
  size_t size() const { return borrowed_ ? borrowed_size_ : owned_.size(); }
  bool empty() const { return size() == 0; }
  unsigned char operator[](size_t k) const { return data()[k]; }
  void resize(size_t n) { own().resize(n); }
  const unsigned char* begin() const { return data(); }
  const unsigned char* end() const { return data() + size(); }
  operator std::vector<unsigned char>() const { return {begin(), end()}; }  // NOLINT: a copy, on purpose
  bool borrowed() const { return borrowed_ != nullptr; }

 private:
  // Writes nothing when already owned: kernels read their constants
  // through the non-const data() from several threads at once.
  std::vector<unsigned char>& own() {
    if (borrowed_) {
      owned_.assign(borrowed_, borrowed_ + borrowed_size_);
      borrowed_ = nullptr;
      borrowed_size_ = 0;
    }
    return owned_;
  }
  const unsigned char* borrowed_ = nullptr;
  size_t borrowed_size_ = 0;
  std::vector<unsigned char> owned_;
};

// A constant input (initializer) or tensor attribute, in host memory.
struct ConstantTensor {
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  ConstantBytes bytes;
  template <typename T>
  const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }
  int64_t size() const { return element_count(dims); }
};

struct ValueDesc {
  bool present = false;             // false for an omitted optional input
  int32_t dtype = 0;
  int32_t rank = -1;                // -1: unknown
  std::vector<int64_t> dims;        // -1 entries: unknown
  std::optional<ConstantTensor> constant;
  bool shape_known() const {
    return rank >= 0 && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
  }
};

// A node's inputs or outputs. Indexing past the end throws InvalidNode
// (INVALID_ARGUMENT through guard()) instead of reading past the vector: a
// kernel that reads an input its definition does not declare (.inputs(n))
// meets a hostile model's node with fewer as an error, not as undefined
// behaviour.
class ValueDescs : public std::vector<ValueDesc> {
 public:
  explicit ValueDescs(const char* side) : side_(side) {}
  const ValueDesc& operator[](size_t k) const { return checked(k); }
  ValueDesc& operator[](size_t k) { return const_cast<ValueDesc&>(checked(k)); }

 private:
  const ValueDesc& checked(size_t k) const {
    if (k >= size())
      throw InvalidNode("the node has " + std::to_string(size()) + " " + side_ + (size() == 1 ? "" : "s") +
                        "; the kernel needs " + side_ + " " + std::to_string(k));
    return std::vector<ValueDesc>::operator[](k);
  }
  const char* side_;
};

struct Attribute {
  int32_t type = ONYX_ATTR_UNDEFINED;
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::optional<ConstantTensor> tensor;
  const OnyxGraphView* graph = nullptr;  // valid only during the call that built the NodeInfo
};

inline ConstantTensor constant_of(const OnyxTensorView& view, Constants mode) {
  ConstantTensor t;
  t.dtype = view.dtype;
  t.dims.assign(view.dims, view.dims + view.rank);
  size_t bytes = dtype_bytes(view.dtype, size_t(element_count(t.dims)));
  t.bytes = mode == Constants::kBorrow ? ConstantBytes::borrow(view.data, bytes)
                                       : ConstantBytes::copy(view.data, bytes);
  return t;
}

class NodeInfo {
 public:
  std::string name, op_type, domain;
  int64_t opset = 0;
  ValueDescs inputs{"input"}, outputs{"output"};
  std::vector<std::pair<std::string, Attribute>> attributes;

  NodeInfo(const OnyxGraphView& graph, uint32_t node_index, Constants constants = Constants::kCopy) {
    const OnyxNodeView& n = graph.nodes[node_index];
    name = n.name ? n.name : "";
    op_type = n.op_type;
    domain = n.domain ? n.domain : "";
    opset = n.opset_version;
    auto desc = [&](int32_t index) {
      ValueDesc d;
      if (index == ONYX_NO_VALUE) return d;
      const OnyxValueInfo& v = graph.values[index];
      d.present = true;
      d.dtype = v.dtype;
      d.rank = v.rank;
      if (v.rank > 0) d.dims.assign(v.dims, v.dims + v.rank);
      if ((v.flags & ONYX_VALUE_CONSTANT) && v.constant) d.constant = constant_of(*v.constant, constants);
      return d;
    };
    for (size_t k = 0; k < n.input_count; ++k) inputs.push_back(desc(n.inputs[k]));
    for (size_t k = 0; k < n.output_count; ++k) outputs.push_back(desc(n.outputs[k]));
    for (size_t k = 0; k < n.attribute_count; ++k) {
      const OnyxAttribute& a = n.attributes[k];
      Attribute out;
      out.type = a.type;
      out.f = a.f;
      out.i = a.i;
      if (a.s) out.s.assign(a.s, a.s_len);
      if (a.type == ONYX_ATTR_FLOATS) out.floats.assign(a.floats, a.floats + a.count);
      if (a.type == ONYX_ATTR_INTS) out.ints.assign(a.ints, a.ints + a.count);
      if (a.type == ONYX_ATTR_STRINGS)
        for (size_t j = 0; j < a.count; ++j) out.strings.emplace_back(a.strings[j]);
      if (a.type == ONYX_ATTR_TENSOR && a.tensor) out.tensor = constant_of(*a.tensor, constants);
      out.graph = a.graph;
      attributes.emplace_back(a.name, std::move(out));
    }
  }

  const Attribute* attr(std::string_view key) const {
    for (const auto& [k, v] : attributes)
      if (k == key) return &v;
    return nullptr;
  }
  bool has(std::string_view key) const { return attr(key) != nullptr; }
  int64_t get_int(std::string_view key, int64_t fallback) const {
    const Attribute* a = attr(key);
    return a ? a->i : fallback;
  }
  double get_float(std::string_view key, double fallback) const {
    const Attribute* a = attr(key);
    return a ? a->f : fallback;
  }
  std::string get_string(std::string_view key, std::string fallback) const {
    const Attribute* a = attr(key);
    return a ? a->s : fallback;
  }
  std::vector<int64_t> get_ints(std::string_view key, std::vector<int64_t> fallback = {}) const {
    const Attribute* a = attr(key);
    return a ? a->ints : fallback;
  }
  std::vector<float> get_floats(std::string_view key, std::vector<float> fallback = {}) const {
    const Attribute* a = attr(key);
    return a ? a->floats : fallback;
  }
  bool input_present(size_t k) const { return k < inputs.size() && inputs[k].present; }
  int32_t input_dtype(size_t k) const { return input_present(k) ? inputs[k].dtype : 0; }
  // "Add" or "ai.onnx.ml::Binarizer", for messages.
  std::string qualified_op() const { return domain.empty() ? op_type : domain + "::" + op_type; }
};

}  // namespace onyx::sdk
