// fuser_plugin.cpp: the "fuser" provider, purpose-built for the fused-group
// tests (tests/runtime/fusion_test.cpp).
//
// It runs float32 Add and Mul (operands of one shape), Neg and Relu, and the
// custom op onyx.test::SwapDims (a 2-D transpose whose output shape shape
// inference cannot know). A node whose name starts with "g<k>." is claimed
// as part of fused group k, whatever the graph around it, so that a test
// can build the groups a host must refuse to fuse: a member taken by a
// provider listed ahead, a value passed between members that is also read
// outside, a group that is not convex.
//
// Every kernel, single node or group, is a GroupKernel: it computes its
// nodes in order and keeps the values passed between them in memory of its
// own, never asking the host for them (the freedom the ABI gives a fused
// kernel). The last node's elementwise output may overwrite the kernel's
// first input (kernel_output_memory), so tests can see the declaration
// honoured for fused steps.
//
// Device option "say=<text>": device_open logs <text> at ONYX_LOG_INFO.
//
// The provider is the SDK's ProviderTable over FuserProvider: host memory,
// with this plugin's own capability (claims and groups) and make_kernel.
#include <onyx/plugin_sdk.hpp>

#include <cstdlib>
#include <map>
#include <span>

namespace {

namespace sdk = onyx::sdk;

bool elementwise(const std::string& op) { return op == "Add" || op == "Mul" || op == "Neg" || op == "Relu"; }

// "" when this provider runs the node, else why not.
std::string decline_reason(const sdk::NodeInfo& node) {
  const bool swap = node.domain == "onyx.test" && node.op_type == "SwapDims";
  if (!swap && !(node.domain.empty() && elementwise(node.op_type)))
    return "fuser: no kernel for op " + node.op_type;
  const size_t arity = node.op_type == "Add" || node.op_type == "Mul" ? 2 : 1;
  if (node.inputs.size() != arity || node.outputs.size() != 1) return "fuser: unexpected arity";
  for (const sdk::ValueDesc& in : node.inputs)
    if (!in.present || in.dtype != ONYX_DTYPE_FLOAT32) return "fuser: float32 only";
  if (arity == 2 && (!node.inputs[0].shape_known() || node.inputs[0].dims != node.inputs[1].dims))
    return "fuser: operands must have one known shape";
  if (swap && node.inputs[0].rank != 2) return "fuser: SwapDims takes a matrix";
  return {};
}

// The k of a node named "g<k>.<anything>", else 0.
uint32_t group_of(const char* name) {
  if (!name || name[0] != 'g') return 0;
  char* end = nullptr;
  unsigned long k = std::strtoul(name + 1, &end, 10);
  return end != name + 1 && *end == '.' ? uint32_t(k) : 0;
}

class GroupKernel : public sdk::Kernel {
 public:
  // Nodes in topological order. Operands follow the host's step layout
  // (onyx runtime session/step.h): the nodes' inputs in order, less the
  // values computed inside the group; outputs are the nodes' outputs in order.
  GroupKernel(const OnyxGraphView& graph, const uint32_t* nodes, size_t count) {
    std::map<int32_t, size_t> produced_by;  // value -> member
    size_t next_input = 0, next_output = 0;
    for (size_t m = 0; m < count; ++m) {
      const OnyxNodeView& n = graph.nodes[nodes[m]];
      Member member;
      member.op = n.op_type;
      for (size_t k = 0; k < n.input_count; ++k) {
        bool inside = produced_by.count(n.inputs[k]) > 0;
        member.inputs.push_back({inside, inside ? size_t(n.inputs[k]) : next_input++});
      }
      member.output_value = n.outputs[0];
      member.output_index = next_output++;
      produced_by[n.outputs[0]] = m;
      members_.push_back(member);
    }
    // A value a later member reads stays inside the kernel.
    for (Member& member : members_)
      for (const Member& later : members_)
        for (const Operand& operand : later.inputs)
          if (operand.inside && int32_t(operand.index) == member.output_value) member.kept_inside = true;
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    std::map<int32_t, Value> inside;
    for (const Member& m : members_) {
      std::vector<Value> operands;
      for (const Operand& operand : m.inputs) {
        if (operand.inside) {
          operands.push_back(inside.at(int32_t(operand.index)));
          continue;
        }
        sdk::Tensor t = ctx.in(operand.index);
        operands.push_back({t.shape(), t.data<float>(), nullptr});
      }
      std::vector<int64_t> dims = operands[0].dims;
      if (m.op == "SwapDims") std::swap(dims[0], dims[1]);
      float* out = nullptr;
      std::shared_ptr<std::vector<float>> owned;
      if (m.kept_inside) {
        owned = std::make_shared<std::vector<float>>(size_t(sdk::element_count(dims)));
        out = owned->data();
      } else {
        sdk::Tensor y;
        ONYX_SDK_RETURN_IF_ERROR(ctx.output(m.output_index, ONYX_DTYPE_FLOAT32, dims, &y));
        out = y.data<float>();
      }
      run(m.op, operands, out);
      inside[m.output_value] = {dims, out, owned};
    }
    return nullptr;
  }

  // The last node's output may overwrite the first input when both are
  // elementwise-sized: every earlier node has read its operands by then,
  // and the last one reads element i before writing it.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    const Member& last = members_.back();
    if (!elementwise(last.op) || last.output_index >= out.size() || members_[0].inputs.empty() ||
        members_[0].inputs[0].inside)
      return;
    for (const Member& m : members_)
      if (!elementwise(m.op)) return;
    out[last.output_index].kind = ONYX_OUTPUT_MAY_OVERWRITE_INPUT;
    out[last.output_index].input_index = 0;
  }

 private:
  struct Operand {
    bool inside;   // computed by an earlier member
    size_t index;  // inside: the value; else the kernel input
  };
  struct Member {
    std::string op;
    std::vector<Operand> inputs;
    int32_t output_value = -1;
    size_t output_index = 0;
    bool kept_inside = false;
  };
  struct Value {
    std::vector<int64_t> dims;
    const float* data;
    std::shared_ptr<std::vector<float>> owned;
  };

  static void run(const std::string& op, const std::vector<Value>& in, float* out) {
    const int64_t n = sdk::element_count(in[0].dims);
    const float* a = in[0].data;
    const float* b = in.size() > 1 ? in[1].data : nullptr;
    if (op == "SwapDims") {
      const int64_t rows = in[0].dims[0], cols = in[0].dims[1];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = a[r * cols + c];
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      out[i] = op == "Add" ? a[i] + b[i] : op == "Mul" ? a[i] * b[i] : op == "Neg" ? -a[i] : (a[i] > 0 ? a[i] : 0);
  }

  std::vector<Member> members_;
};

// --- the provider: host memory, this plugin's claims, groups and kernels ----

class FuserProvider : public sdk::HostMemory {
 public:
  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t) const {
    return host_device("fuser test device", "Onyx tests");
  }

  sdk::StatusOr<std::unique_ptr<sdk::NoDeviceState>> open_device(size_t, const sdk::DeviceOptions& options) const {
    if (auto say = options.get("say")) sdk::host_log(ONYX_LOG_INFO, "%.*s", int(say->size()), say->data());
    return std::make_unique<sdk::NoDeviceState>();
  }

  OnyxStatus* capability(sdk::NoDeviceState&, const OnyxGraphView& graph, std::span<OnyxNodeClaim> claims) const {
    for (uint32_t k = 0; k < graph.node_count; ++k) {
      std::string why = decline_reason(sdk::NodeInfo(graph, k, sdk::Constants::kBorrow));
      claims[k].claimed = why.empty();
      claims[k].fused_group = why.empty() ? group_of(graph.nodes[k].name) : 0;
      std::snprintf(claims[k].reason, sizeof claims[k].reason, "%s", why.c_str());
    }
    return nullptr;
  }

  sdk::KernelResult make_kernel(sdk::NoDeviceState&, const OnyxGraphView& graph, std::span<const uint32_t> nodes) const {
    for (uint32_t node : nodes) {
      std::string why = decline_reason(sdk::NodeInfo(graph, node, sdk::Constants::kBorrow));
      if (!why.empty()) return sdk::make_status(ONYX_STATUS_UNIMPLEMENTED, "%s", why.c_str());
    }
    return std::make_unique<GroupKernel>(graph, nodes.data(), nodes.size());
  }
};

const OnyxPluginEntry kEntry = sdk::plugin_entry<FuserProvider>("fuser", "test");

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
