// sdk/kernel_registry.hpp: kernels and the registry that finds one for a node.
//
// A KernelDef says which nodes a kernel runs: op and domain, an opset range,
// declarative constraints (input count, element types per input or per type
// variable "T") and an optional extra check, each giving the *decline reason*
// users see in the partition report; and how to create the kernel. Build one
// with KernelDefBuilder (the idea of ONNX Runtime's KernelDefBuilder):
//
//   registry.add(sdk::KernelDefBuilder("Add").since(7).inputs(2)
//                    .type_constraint("T", {0, 1}, sdk::dtypes::kNumeric)
//                    .create<AddKernel>());
//
// A registry also answers the two ABI questions the default ProviderTable
// hooks ask: which nodes of a graph it claims (claim) and the kernel of one
// node (create_kernel). Registration happens at plugin creation; afterwards
// the registry is only read, from any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "compute_context.hpp"
#include "dtype.hpp"
#include "kernel_cache.hpp"
#include "node_info.hpp"
#include "status.hpp"

namespace onyx::sdk {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Must be safe to call concurrently (no unsynchronized mutable state).
  virtual OnyxStatus* compute(ComputeContext& ctx) = 0;
  // Memory declarations, one per output; default: every output is fresh.
  virtual void output_memory(std::span<OnyxOutputMemoryInfo> out) const { (void)out; }
  // ABI 1.2 compiled-partition cache (kernel_cache.hpp): writes what creating
  // this kernel computed, for the provider's make_kernel_from_cache to read
  // back. May run concurrently with compute. Default: nothing worth caching.
  virtual OnyxStatus* serialize(BlobWriter& out) const {
    (void)out;
    return make_status(ONYX_STATUS_UNIMPLEMENTED, "this kernel has no serialized form");
  }
};

// What a kernel factory returns: the kernel, or the status saying why it
// could not be created (reported to the host as is).
using KernelResult = StatusOr<std::unique_ptr<Kernel>>;

// A predicate on a node: "" accepts it, anything else is the decline reason.
using DeclineCheck = std::function<std::string(const NodeInfo&)>;

inline constexpr int64_t kLatestOpset = 1 << 30;

// A constraint on the element types of some inputs, checked before the
// KernelDef's own `supports`. Omitted inputs are skipped.
struct TypeRule {
  std::string name;            // the type variable ("T"), or "" for independent inputs
  std::vector<size_t> inputs;  // input indices; empty: every input
  DTypeSet allowed;            // empty: any type
  bool same_type = false;      // the inputs share one type (a type variable)

  std::string check(const NodeInfo& node) const {
    std::vector<size_t> which = inputs;
    if (which.empty())
      for (size_t k = 0; k < node.inputs.size(); ++k) which.push_back(k);
    size_t first = SIZE_MAX;
    for (size_t k : which) {
      if (!node.input_present(k)) continue;
      int32_t dtype = node.inputs[k].dtype;
      if (!allowed.empty() && !allowed.contains(dtype))
        return node.op_type + ": input " + std::to_string(k) + " has type " + dtype_name(dtype) +
               (allowed.size() == 1 ? "; expected " : "; supported: ") + allowed.names();
      if (!same_type) continue;
      if (first == SIZE_MAX) {
        first = k;
      } else if (dtype != node.inputs[first].dtype) {
        return node.op_type + ": input " + std::to_string(k) + " has type " + dtype_name(dtype) +
               " but input " + std::to_string(first) + " has " + dtype_name(node.inputs[first].dtype) +
               (name.empty() ? std::string() : " (both are type " + name + ")");
      }
    }
    return {};
  }
};

namespace detail {
template <typename DeviceArg>
struct KernelFactory {
  using type = std::function<KernelResult(const NodeInfo&, const DeviceArg&)>;
};
template <>
struct KernelFactory<void> {
  using type = std::function<KernelResult(const NodeInfo&)>;
};
}  // namespace detail

// DeviceArg: what the factory receives besides the node (e.g. the opened
// device's settings); void for kernels that depend on the node alone.
template <typename DeviceArg = void>
struct BasicKernelDef {
  using CreateFn = typename detail::KernelFactory<DeviceArg>::type;

  std::string domain;  // "" for ai.onnx
  std::string op_type;
  int64_t since_version = 1;  // opset range this kernel implements
  int64_t until_version = kLatestOpset;
  // Extra check after the declarative constraints below: "" accepts the
  // node, anything else is the decline reason.
  DeclineCheck supports{};
  // Creates the kernel for an accepted node (a NodeInfo that owns its
  // constants: the kernel may keep them).
  CreateFn create{};
  // Input count: between min_inputs and max_inputs inputs, the first
  // min_inputs present. Unchecked when both keep their defaults.
  size_t min_inputs = 0;
  size_t max_inputs = SIZE_MAX;
  std::vector<TypeRule> type_rules{};

  // "" when this kernel runs `node`, else why not. Only called for nodes
  // whose op, domain and opset match.
  std::string decline_reason(const NodeInfo& node) const {
    size_t n = node.inputs.size();
    if (n < min_inputs || n > max_inputs)
      return node.op_type + ": expects " +
             (min_inputs == max_inputs ? std::to_string(min_inputs)
                                       : std::to_string(min_inputs) + " to " + std::to_string(max_inputs)) +
             " inputs, the node has " + std::to_string(n);
    for (size_t k = 0; k < min_inputs; ++k)
      if (!node.input_present(k)) return node.op_type + ": required input " + std::to_string(k) + " is missing";
    for (const TypeRule& rule : type_rules)
      if (std::string why = rule.check(node); !why.empty()) return why;
    return supports ? supports(node) : std::string();
  }
};
using KernelDef = BasicKernelDef<>;

// Builds a KernelDef step by step; ends with create(...), which returns it.
template <typename DeviceArg = void>
class BasicKernelDefBuilder {
 public:
  using Def = BasicKernelDef<DeviceArg>;

  explicit BasicKernelDefBuilder(std::string op_type, std::string domain = "") {
    def_.op_type = std::move(op_type);
    def_.domain = std::move(domain);
  }
  BasicKernelDefBuilder& domain(std::string domain) {
    def_.domain = std::move(domain);
    return *this;
  }
  // The first opset whose definition of the op this kernel implements.
  BasicKernelDefBuilder& since(int64_t opset) {
    def_.since_version = opset;
    return *this;
  }
  BasicKernelDefBuilder& opsets(int64_t since, int64_t until) {
    def_.since_version = since;
    def_.until_version = until;
    return *this;
  }
  // Exactly `count` inputs, all present.
  BasicKernelDefBuilder& inputs(size_t count) { return inputs(count, count); }
  // Between min and max inputs; the first min present.
  BasicKernelDefBuilder& inputs(size_t min, size_t max) {
    def_.min_inputs = min;
    def_.max_inputs = max;
    return *this;
  }
  // Input `index`, when present, has a type in `allowed`.
  BasicKernelDefBuilder& input_type(size_t index, DTypeSet allowed) {
    def_.type_rules.push_back({"", {index}, allowed, false});
    return *this;
  }
  // Each of `indices` (every input when empty), when present, has a type in
  // `allowed`; they may differ.
  BasicKernelDefBuilder& input_types(std::initializer_list<size_t> indices, DTypeSet allowed) {
    def_.type_rules.push_back({"", indices, allowed, false});
    return *this;
  }
  // Every present input has a type in `allowed`.
  BasicKernelDefBuilder& all_inputs(DTypeSet allowed) { return input_types({}, allowed); }
  // A type variable: the present inputs of `indices` share one type, which
  // is in `allowed` (empty set: any type).
  BasicKernelDefBuilder& type_constraint(std::string name, std::initializer_list<size_t> indices,
                                         DTypeSet allowed) {
    def_.type_rules.push_back({std::move(name), indices, allowed, true});
    return *this;
  }
  // An extra check, run after the declarative ones and any earlier check:
  // returns "" to accept the node or the decline reason.
  BasicKernelDefBuilder& check(DeclineCheck fn) {
    if (!def_.supports) {
      def_.supports = std::move(fn);
    } else {
      def_.supports = [first = std::move(def_.supports), then = std::move(fn)](const NodeInfo& node) {
        std::string why = first(node);
        return why.empty() ? then(node) : why;
      };
    }
    return *this;
  }
  // Finishes with a factory: (node) or, with a DeviceArg, (node, device).
  Def create(typename Def::CreateFn fn) {
    def_.create = std::move(fn);
    return std::move(def_);
  }
  Def create(std::function<KernelResult(const NodeInfo&)> fn)
    requires(!std::is_void_v<DeviceArg>)
  {
    def_.create = [fn = std::move(fn)](const NodeInfo& node, const DeviceArg&) { return fn(node); };
    return std::move(def_);
  }
  // Finishes with K's constructor: K(node, device) when it has one, else K(node).
  template <typename K>
  Def create() {
    if constexpr (std::is_void_v<DeviceArg>) {
      def_.create = [](const NodeInfo& node) -> KernelResult { return std::make_unique<K>(node); };
    } else if constexpr (std::is_constructible_v<K, const NodeInfo&, const DeviceArg&>) {
      def_.create = [](const NodeInfo& node, const DeviceArg& device) -> KernelResult {
        return std::make_unique<K>(node, device);
      };
    } else {
      def_.create = [](const NodeInfo& node, const DeviceArg&) -> KernelResult {
        return std::make_unique<K>(node);
      };
    }
    return std::move(def_);
  }

 private:
  Def def_;
};
using KernelDefBuilder = BasicKernelDefBuilder<>;

// The ABI's rule for element types (onyx_provider.h): a plugin meeting a
// dtype code its header does not define declines the node with this reason
// instead of guessing a size. "" when every present input and output has a
// known code (UNDEFINED counts as known: an omitted or untyped value).
inline std::string unknown_dtype_reason(const NodeInfo& n) {
  for (const auto* list : {&n.inputs, &n.outputs}) {
    for (size_t k = 0; k < list->size(); ++k) {
      const ValueDesc& v = (*list)[k];
      if (!v.present || onyx_dtype_name(v.dtype)) continue;
      return std::string(list == &n.inputs ? "input " : "output ") + std::to_string(k) + " has element type " +
             std::to_string(v.dtype) + ", which this plugin's ABI header does not define";
    }
  }
  return {};
}

// The kernels of a provider, searched in registration order.
template <typename Device = void>
class BasicKernelRegistry {
 public:
  using DeviceArg = Device;
  using Def = BasicKernelDef<DeviceArg>;

  // `kernel_kind` names the kernels in "no <kind> kernel for op X" ("oneDNN");
  // empty: "no kernel for op X".
  explicit BasicKernelRegistry(std::string kernel_kind = "") : kind_(std::move(kernel_kind)) {}

  void add(Def def) { defs_.push_back(std::move(def)); }

  // Finds the kernel for a node, or explains why there is none. The first
  // definition whose op, domain and opset match decides.
  const Def* find(const NodeInfo& node, std::string* reason) const {
    if (std::string why = unknown_dtype_reason(node); !why.empty()) {
      *reason = std::move(why);
      return nullptr;
    }
    const std::string_view domain = node.domain == "ai.onnx" ? std::string_view() : node.domain;
    bool op_known = false;
    for (const Def& d : defs_) {
      if (d.domain != domain || d.op_type != node.op_type) continue;
      op_known = true;
      if (node.opset < d.since_version || node.opset > d.until_version) continue;
      std::string why = d.decline_reason(node);
      if (why.empty()) return &d;
      *reason = std::move(why);
      return nullptr;
    }
    std::string op = domain.empty() ? node.op_type : std::string(domain) + "::" + node.op_type;
    std::string kernel = kind_.empty() ? "kernel" : kind_ + " kernel";
    *reason = op_known ? "no " + kernel + " for opset " + std::to_string(node.opset) + " of " + op
                       : "no " + kernel + " for op " + op;
    return nullptr;
  }
  const std::vector<Def>& defs() const { return defs_; }

  // The default capability: claims every node this registry has a kernel
  // for (each its own kernel, fused_group 0) and gives the reason for every
  // other. Reads constants in place (no copy of any weight).
  void claim(const OnyxGraphView& graph, std::span<OnyxNodeClaim> claims) const {
    for (size_t k = 0; k < graph.node_count && k < claims.size(); ++k) {
      NodeInfo node(graph, uint32_t(k), Constants::kBorrow);
      std::string reason;
      claims[k].claimed = find(node, &reason) != nullptr;
      claims[k].fused_group = 0;
      std::snprintf(claims[k].reason, sizeof claims[k].reason, "%s", reason.c_str());
    }
  }

  // The default kernel creation for node `index` of `graph`: its definition's
  // factory, given a NodeInfo that owns copies of the constants.
  KernelResult create_kernel(const OnyxGraphView& graph, uint32_t index) const
    requires std::is_void_v<DeviceArg>
  {
    NodeInfo node(graph, index, Constants::kCopy);
    std::string reason;
    const Def* def = find(node, &reason);
    if (!def) return make_status(ONYX_STATUS_UNIMPLEMENTED, "node '%s': %s", node.name.c_str(), reason.c_str());
    return def->create(node);
  }
  template <typename D = DeviceArg>
    requires(!std::is_void_v<D>)
  KernelResult create_kernel(const OnyxGraphView& graph, uint32_t index, const D& device) const {
    NodeInfo node(graph, index, Constants::kCopy);
    std::string reason;
    const Def* def = find(node, &reason);
    if (!def) return make_status(ONYX_STATUS_UNIMPLEMENTED, "node '%s': %s", node.name.c_str(), reason.c_str());
    return def->create(node, device);
  }

  static std::string qualified(const NodeInfo& n) { return n.qualified_op(); }

 private:
  std::string kind_;
  std::vector<Def> defs_;
};
using KernelRegistry = BasicKernelRegistry<>;

// A check for `supports`: every present input has one of `types`.
inline std::string require_input_types(const NodeInfo& n, std::initializer_list<int32_t> types) {
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (!n.inputs[k].present) continue;
    if (std::find(types.begin(), types.end(), n.inputs[k].dtype) == types.end())
      return std::string("input ") + std::to_string(k) + " has unsupported type " +
             dtype_name(n.inputs[k].dtype);
  }
  return {};
}

}  // namespace onyx::sdk
