// kernel_harness.cpp: run_node. The node becomes a one-node ONNX graph
// (OwnedGraph builds the ABI's view of it, as the conformance suites do) and
// runs on the current provider through the conformance ABI host. Tensors and
// attributes are in kernel_harness_tensor.cpp.
#include "kernel_harness.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>

#include "graph_view.h"
#include "test_providers.h"

namespace onyx::test {

namespace {

namespace cf = onyx::conformance;

onnx::TensorProto to_proto(const HostTensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(t.dtype);
  for (int64_t d : t.dims) p.add_dims(d);
  p.set_raw_data(t.bytes.data(), t.bytes.size());
  return p;
}

void declare(onnx::ValueInfoProto* v, const std::string& name, int32_t dtype, const std::vector<int64_t>* dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(dtype);
  if (!dims) return;
  auto* shape = t->mutable_shape();
  for (int64_t d : *dims) shape->add_dim()->set_dim_value(d);
}

void add_attribute(onnx::NodeProto& node, const std::string& key, const AttrValue& a) {
  auto* p = node.add_attribute();
  p->set_name(key);
  p->set_type(onnx::AttributeProto::AttributeType(a.type));
  switch (a.type) {
    case ONYX_ATTR_FLOAT: p->set_f(float(a.f)); break;  // ONNX stores float32
    case ONYX_ATTR_INT: p->set_i(a.i); break;
    case ONYX_ATTR_STRING: p->set_s(a.s); break;
    case ONYX_ATTR_FLOATS: for (float f : a.floats) p->add_floats(f); break;
    case ONYX_ATTR_INTS: for (int64_t i : a.ints) p->add_ints(i); break;
    case ONYX_ATTR_STRINGS: for (const std::string& s : a.strings) p->add_strings(s); break;
    case ONYX_ATTR_TENSOR: *p->mutable_t() = to_proto(a.tensor, key); break;
    default: break;
  }
}

// The node as a one-node graph: inputs "input_K" (constants as
// initializers), outputs "output_K" of unknown shape.
onnx::GraphProto graph_of(const NodeSpec& spec, bool hide_input_shapes) {
  onnx::GraphProto g;
  onnx::NodeProto& node = *g.add_node();
  node.set_name(spec.name);
  node.set_op_type(spec.op_type);
  node.set_domain(spec.domain);
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const HostTensor& t = spec.inputs[k];
    const std::string name = "input_" + std::to_string(k);
    node.add_input(t.present ? name : std::string());
    if (!t.present) continue;
    if (t.constant) *g.add_initializer() = to_proto(t, name);
    else declare(g.add_input(), name, t.dtype, hide_input_shapes ? nullptr : &t.dims);
  }
  for (size_t k = 0; k < spec.output_count; ++k) {
    const std::string name = "output_" + std::to_string(k);
    if (k < spec.omitted_outputs.size() && spec.omitted_outputs[k]) {
      node.add_output("");
      continue;
    }
    node.add_output(name);
    declare(g.add_output(), name, k < spec.output_dtypes.size() ? spec.output_dtypes[k] : 0, nullptr);
  }
  for (const auto& [key, a] : spec.attributes) add_attribute(node, key, a);
  return g;
}

// "" or why the harness cannot hold the tensor.
std::string check_tensor(const HostTensor& t, const std::string& what) {
  size_t want = 0;
  try {
    want = cf::tensor_byte_size(t.dtype, t.size());
  } catch (const std::exception& e) {
    return what + ": " + e.what();
  }
  if (t.bytes.size() != want)
    return what + " has " + std::to_string(t.bytes.size()) + " bytes, its dtype and dims need " +
           std::to_string(want);
  return {};
}

std::string reason_of(const OnyxNodeClaim& c) { return std::string(c.reason, strnlen(c.reason, sizeof c.reason)); }

}  // namespace

bool on_reference_provider() { return current_provider().reference; }

RunResult run_node(const NodeSpec& spec, const RunOptions& options) {
  RunResult result;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    if (!spec.inputs[k].present) continue;
    result.error = check_tensor(spec.inputs[k], "harness: input " + std::to_string(k));
    if (!result.error.empty()) return result;
  }
  for (const auto& [key, a] : spec.attributes) {
    if (a.type != ONYX_ATTR_TENSOR) continue;
    result.error = check_tensor(a.tensor, "harness: attribute '" + key + "'");
    if (!result.error.empty()) return result;
  }
  const TestProvider& provider = current_provider();
  const LoadedProvider& p = load_provider(provider);
  const OnyxProviderApi* api = p.plugin->api();
  auto graph = cf::OwnedGraph::from_onnx(graph_of(spec, options.hide_input_shapes), {{spec.domain, spec.opset}});

  OnyxNodeClaim claim{};
  claim.struct_size = sizeof claim;
  try {
    cf::check_status(api->get_capability(p.device->get(), &graph->view(), &claim), "get_capability");
  } catch (const cf::CaseError& e) {
    result.error = e.what();
    return result;
  }
  if (!claim.claimed) {
    if (!provider.reference) throw ProviderDeclined(spec.op_type + ": " + reason_of(claim));
    result.declined = true;
    result.error = reason_of(claim);
    return result;
  }
  const uint32_t node = 0;
  OnyxKernel* kernel = nullptr;
  if (OnyxStatus* st = api->kernel_create(p.device->get(), &graph->view(), &node, 1, &kernel)) {
    result.error = cf::status_message_of(st);
    if (result.error.empty()) result.error = "kernel_create failed (status without message)";
    cf::release_status(st);
    return result;
  }
  std::unique_ptr<OnyxKernel, void (*)(OnyxKernel*)> kernel_guard(kernel, api->kernel_destroy);

  std::vector<cf::KernelInput> inputs;
  for (const HostTensor& t : spec.inputs) {
    cf::KernelInput in;
    in.present = t.present;
    in.constant = t.constant;
    in.tensor.dtype = t.dtype;
    in.tensor.dims = t.dims;
    in.tensor.bytes.assign(t.bytes.begin(), t.bytes.end());
    inputs.push_back(std::move(in));
  }
  cf::KernelRun run;
  try {
    run = cf::run_kernel(*p.plugin, *p.device, kernel, inputs, spec.output_count, {options.threads, options.in_place});
  } catch (const cf::CaseError& e) {
    result.error = e.what();
    return result;
  }
  result.output_memory = run.output_memory;
  result.shared_with_input = run.shared_with_input;
  for (const cf::HostTensor& out : run.outputs) {
    HostTensor t;
    t.present = out.dtype != 0;
    t.dtype = out.dtype;
    t.dims = out.dims;
    t.bytes.assign(out.bytes.begin(), out.bytes.end());
    result.outputs.push_back(std::move(t));
  }
  return result;
}

}  // namespace onyx::test
