// kernel_harness_onnx.cpp: loads an ONNX backend node test (model.onnx with
// one node, test_data_set_0/{input,output}_K.pb) and runs it through run_node.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kernel_harness.h"

namespace onyx::test {
namespace {

namespace fs = std::filesystem;

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? "," : "") + std::to_string(dims[k]);
  return s + "]";
}

template <typename Proto>
bool parse_file(const fs::path& path, Proto* proto) {
  std::ifstream in(path, std::ios::binary);
  return in && proto->ParseFromIstream(&in);
}

// Appends the low `width` bytes of each value (little-endian host).
template <typename Repeated>
void append_low_bytes(const Repeated& values, size_t width, std::vector<unsigned char>* out) {
  for (auto v : values) {
    unsigned char b[8];
    std::memcpy(b, &v, sizeof v);
    out->insert(out->end(), b, b + width);
  }
}

// TensorProto -> HostTensor; returns "" or why the tensor cannot be held.
std::string from_proto(const ONNX_NAMESPACE::TensorProto& p, HostTensor* t) {
  if (p.data_location() == ONNX_NAMESPACE::TensorProto::EXTERNAL) return "tensor with external data";
  if (p.data_type() == ONNX_NAMESPACE::TensorProto::STRING) return "string tensor";
  t->dtype = p.data_type();
  t->dims.assign(p.dims().begin(), p.dims().end());
  t->bytes.clear();
  size_t element = dtype_bytes(t->dtype);
  bool sub_byte = t->dtype == ONYX_DTYPE_INT4 || t->dtype == ONYX_DTYPE_UINT4 ||
                  t->dtype == ONYX_DTYPE_FLOAT4E2M1;
  if (!element && !sub_byte)
    return "tensor element type " + std::to_string(t->dtype) + ", which the Onyx ABI does not define";
  if (!p.raw_data().empty()) {
    t->bytes.assign(p.raw_data().begin(), p.raw_data().end());
  } else {
    switch (t->dtype) {
      case ONYX_DTYPE_FLOAT32: case ONYX_DTYPE_COMPLEX64:
        append_low_bytes(p.float_data(), 4, &t->bytes);
        break;
      case ONYX_DTYPE_FLOAT64: case ONYX_DTYPE_COMPLEX128:
        append_low_bytes(p.double_data(), 8, &t->bytes);
        break;
      case ONYX_DTYPE_INT64:
        append_low_bytes(p.int64_data(), 8, &t->bytes);
        break;
      case ONYX_DTYPE_UINT32: case ONYX_DTYPE_UINT64:
        append_low_bytes(p.uint64_data(), element, &t->bytes);
        break;
      default:
        // int32_data holds one element per entry for the <= 32-bit types
        // (float16/bfloat16/float8 as their bit patterns) and one packed
        // byte per entry for the 4-bit types.
        append_low_bytes(p.int32_data(), sub_byte ? 1 : element, &t->bytes);
        break;
    }
  }
  size_t want = sub_byte ? size_t(t->size() + 1) / 2 : size_t(t->size()) * element;
  if (t->bytes.size() != want)
    return "tensor '" + p.name() + "' has " + std::to_string(t->bytes.size()) + " bytes of data, " +
           "its dims " + dims_text(t->dims) + " need " + std::to_string(want);
  return {};
}

// AttributeProto -> AttrValue; returns "" or why it cannot be passed.
std::string from_proto(const ONNX_NAMESPACE::AttributeProto& a, AttrValue* v) {
  using A = ONNX_NAMESPACE::AttributeProto;
  switch (a.type()) {
    case A::FLOAT: v->type = ONYX_ATTR_FLOAT; v->f = a.f(); return {};
    case A::INT: v->type = ONYX_ATTR_INT; v->i = a.i(); return {};
    case A::STRING: v->type = ONYX_ATTR_STRING; v->s = a.s(); return {};
    case A::FLOATS:
      v->type = ONYX_ATTR_FLOATS;
      v->floats.assign(a.floats().begin(), a.floats().end());
      return {};
    case A::INTS:
      v->type = ONYX_ATTR_INTS;
      v->ints.assign(a.ints().begin(), a.ints().end());
      return {};
    case A::STRINGS:
      v->type = ONYX_ATTR_STRINGS;
      v->strings.assign(a.strings().begin(), a.strings().end());
      return {};
    case A::TENSOR: {
      v->type = ONYX_ATTR_TENSOR;
      std::string bad = from_proto(a.t(), &v->tensor);
      return bad.empty() ? bad : "attribute '" + a.name() + "': " + bad;
    }
    default:
      return "attribute '" + a.name() + "' has type " + A::AttributeType_Name(a.type()) +
             ", which the harness does not pass";
  }
}

bool is_float_type(int32_t dtype) {
  return dtype == ONYX_DTYPE_FLOAT32 || dtype == ONYX_DTYPE_FLOAT64 ||
         dtype == ONYX_DTYPE_FLOAT16 || dtype == ONYX_DTYPE_BFLOAT16;
}

}  // namespace

std::string compare_tensors(const HostTensor& actual, const HostTensor& expected,
                            const Tolerance& tolerance) {
  if (!actual.present) return "output missing";
  if (actual.dtype != expected.dtype)
    return "dtype " + std::to_string(actual.dtype) + ", expected " + std::to_string(expected.dtype);
  if (actual.dims != expected.dims)
    return "dims " + dims_text(actual.dims) + ", expected " + dims_text(expected.dims);
  if (!is_float_type(actual.dtype)) {
    if (actual.bytes == expected.bytes) return {};
    std::vector<double> a = actual.as_doubles(), e = expected.as_doubles();
    for (size_t k = 0; k < a.size() && k < e.size(); ++k)
      if (a[k] != e[k]) {
        std::ostringstream s;
        s << "element " << k << " is " << a[k] << ", expected " << e[k];
        return s.str();
      }
    return "bytes differ";
  }
  std::vector<double> a = actual.as_doubles(), e = expected.as_doubles();
  size_t bad = 0, first = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    bool same = (std::isnan(a[k]) && std::isnan(e[k])) || a[k] == e[k] ||
                std::fabs(a[k] - e[k]) <= tolerance.atol + tolerance.rtol * std::fabs(e[k]);
    if (!same && bad++ == 0) first = k;
  }
  if (!bad) return {};
  std::ostringstream s;
  s.precision(9);
  s << bad << " of " << a.size() << " elements differ; first: element " << first << " is "
    << a[first] << ", expected " << e[first] << " (rtol " << tolerance.rtol << ", atol "
    << tolerance.atol << ")";
  return s.str();
}

std::string onnx_node_tests_dir() {
  const char* env = std::getenv("ONYX_ONNX_NODE_TESTS");
  return env && *env ? env : "/work/shared/onnx-backend-tests/node";
}

std::vector<std::string> list_onnx_node_tests(const std::string& prefix) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(onnx_node_tests_dir(), ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && fs::exists(entry.path() / "model.onnx")) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string onnx_node_test_op_type(const std::string& name) {
  ONNX_NAMESPACE::ModelProto model;
  if (!parse_file(fs::path(onnx_node_tests_dir()) / name / "model.onnx", &model)) return {};
  return model.graph().node_size() == 1 ? model.graph().node(0).op_type() : std::string();
}

OnnxCaseResult run_onnx_node_test(const std::string& name, const Tolerance& tolerance,
                                  const RunOptions& options) {
  OnnxCaseResult r;
  auto finish = [&](OnnxCaseResult::Outcome outcome, std::string message) {
    r.outcome = outcome;
    r.message = std::move(message);
    return r;
  };
  fs::path dir = fs::path(onnx_node_tests_dir()) / name;
  ONNX_NAMESPACE::ModelProto model;
  if (!parse_file(dir / "model.onnx", &model))
    return finish(OnnxCaseResult::kFail, "cannot read " + (dir / "model.onnx").string());
  const ONNX_NAMESPACE::GraphProto& graph = model.graph();
  if (graph.node_size() != 1)
    return finish(OnnxCaseResult::kSkipped,
                  "model has " + std::to_string(graph.node_size()) + " nodes (harness runs one)");
  const ONNX_NAMESPACE::NodeProto& proto = graph.node(0);

  NodeSpec spec(proto.op_type(), 0);
  spec.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
  spec.name = proto.name().empty() ? name : proto.name();
  for (const auto& op : model.opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    if (domain == spec.domain) spec.opset = op.version();
  }
  for (const auto& a : proto.attribute()) {
    AttrValue v;
    std::string bad = from_proto(a, &v);
    if (!bad.empty()) return finish(OnnxCaseResult::kSkipped, bad);
    spec.attr(a.name(), std::move(v));
  }

  // Values by name: initializers (constant) and the data set's inputs.
  std::map<std::string, HostTensor> known;
  for (const auto& init : graph.initializer()) {
    HostTensor t;
    std::string bad = from_proto(init, &t);
    if (!bad.empty()) return finish(OnnxCaseResult::kSkipped, bad);
    t.constant = true;
    known[init.name()] = std::move(t);
  }
  fs::path data = dir / "test_data_set_0";
  int input_file = 0;
  for (const auto& in : graph.input()) {
    if (known.count(in.name())) continue;
    if (!in.type().has_tensor_type())
      return finish(OnnxCaseResult::kSkipped, "input '" + in.name() + "' is not a tensor");
    ONNX_NAMESPACE::TensorProto p;
    fs::path file = data / ("input_" + std::to_string(input_file++) + ".pb");
    if (!parse_file(file, &p)) return finish(OnnxCaseResult::kFail, "cannot read " + file.string());
    HostTensor t;
    std::string bad = from_proto(p, &t);
    if (!bad.empty()) return finish(OnnxCaseResult::kSkipped, "input '" + in.name() + "': " + bad);
    known[in.name()] = std::move(t);
  }
  for (const std::string& in : proto.input()) {
    if (in.empty()) {
      spec.inputs.push_back(omitted());
      continue;
    }
    auto it = known.find(in);
    if (it == known.end())
      return finish(OnnxCaseResult::kFail, "node input '" + in + "' is not a graph input");
    spec.inputs.push_back(it->second);
  }

  // Expected outputs, by node output index.
  spec.output_count = size_t(proto.output_size());
  spec.output_dtypes.assign(spec.output_count, 0);
  std::vector<std::pair<size_t, HostTensor>> expected;
  for (int k = 0; k < graph.output_size(); ++k) {
    const auto& out = graph.output(k);
    if (!out.type().has_tensor_type())
      return finish(OnnxCaseResult::kSkipped, "output '" + out.name() + "' is not a tensor");
    auto pos = std::find(proto.output().begin(), proto.output().end(), out.name());
    if (pos == proto.output().end())
      return finish(OnnxCaseResult::kFail, "graph output '" + out.name() + "' is not a node output");
    size_t index = size_t(pos - proto.output().begin());
    spec.output_dtypes[index] = out.type().tensor_type().elem_type();
    ONNX_NAMESPACE::TensorProto p;
    fs::path file = data / ("output_" + std::to_string(k) + ".pb");
    if (!parse_file(file, &p)) return finish(OnnxCaseResult::kFail, "cannot read " + file.string());
    HostTensor t;
    std::string bad = from_proto(p, &t);
    if (!bad.empty()) return finish(OnnxCaseResult::kSkipped, "output '" + out.name() + "': " + bad);
    expected.emplace_back(index, std::move(t));
  }

  RunResult run = run_node(spec, options);
  if (run.declined) return finish(OnnxCaseResult::kDeclined, run.error);
  if (!run.ok()) return finish(OnnxCaseResult::kFail, "error: " + run.error);
  for (const auto& [index, want] : expected) {
    std::string diff = compare_tensors(run.outputs[index], want, tolerance);
    if (!diff.empty())
      return finish(OnnxCaseResult::kFail, "output " + std::to_string(index) + ": " + diff);
  }
  return finish(OnnxCaseResult::kPass, {});
}

}  // namespace onyx::test
