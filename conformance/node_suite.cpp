// node_suite.cpp: running one ONNX backend node test through the C API.
#include "node_suite.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>

#include "compare.h"
#include "values.h"

namespace onyx::conformance {

namespace fs = std::filesystem;

namespace {

onnx::ModelProto read_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CaseError("cannot open '" + path + "'");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) throw CaseError("'" + path + "' is not a valid ONNX model");
  return model;
}

// Owns C API objects and releases them at scope exit.
struct StatusGuard {
  OnyxStatus* status;
  ~StatusGuard() { onyx_status_release(status); }
};
void check(OnyxStatus* status, const std::string& what) {
  StatusGuard guard{status};
  if (status) throw CaseError(what + ": " + onyx_status_message(status));
}
struct TensorDeleter {
  void operator()(OnyxTensor* t) const { onyx_tensor_release(t); }
};
using TensorPtr = std::unique_ptr<OnyxTensor, TensorDeleter>;
struct SessionDeleter {
  void operator()(OnyxSession* s) const { onyx_session_release(s); }
};
struct OptionsDeleter {
  void operator()(OnyxSessionOptions* o) const { onyx_session_options_release(o); }
};

struct ValueDeleter {
  void operator()(OnyxValue* v) const { onyx_value_release(v); }
};
using ValuePtr = std::unique_ptr<OnyxValue, ValueDeleter>;

// What the C API cannot carry in a model's declared input/output type, or "".
// Tensors (string tensors too), and sequences and optionals of them, it
// carries (onyx_session_run_values); maps not yet.
std::string type_limit(const onnx::TypeProto& type) {
  if (type.has_sequence_type()) {
    std::string inner = type_limit(type.sequence_type().elem_type());
    return inner.empty() ? "" : "sequence of " + inner;
  }
  if (type.has_optional_type()) {
    std::string inner = type_limit(type.optional_type().elem_type());
    return inner.empty() ? "" : "optional of " + inner;
  }
  if (type.has_map_type()) return "map";
  return "";
}

TensorPtr to_onyx(const HostTensor& t, const std::string& where) {
  OnyxTensor* out = nullptr;
  if (t.dtype == onnx::TensorProto::STRING) {
    std::vector<const char*> data;
    std::vector<size_t> lengths;
    for (const std::string& s : t.strings) {
      data.push_back(s.data());
      lengths.push_back(s.size());
    }
    check(onyx_tensor_create_strings(data.data(), lengths.data(), t.dims.data(), t.dims.size(), &out), where);
    return TensorPtr(out);
  }
  check(onyx_tensor_create(t.dtype, t.dims.data(), t.dims.size(), &out), where);
  TensorPtr tensor(out);
  if (onyx_tensor_byte_size(out) != t.bytes.size())
    throw CaseError(where + ": the C API sizes this tensor at " +
                    std::to_string(onyx_tensor_byte_size(out)) + " bytes, the file holds " +
                    std::to_string(t.bytes.size()));
  if (!t.bytes.empty()) std::copy(t.bytes.begin(), t.bytes.end(), static_cast<char*>(onyx_tensor_data(out)));
  return tensor;
}

// A test value as an OnyxValue (tensors, sequences, optionals).
ValuePtr to_onyx_value(const TestValue& v, const std::string& where) {
  OnyxValue* out = nullptr;
  switch (v.kind) {
    case TestValue::Kind::kTensor: {
      TensorPtr t = to_onyx(v.tensor, where);
      check(onyx_value_create_tensor(t.get(), &out), where);
      break;
    }
    case TestValue::Kind::kSequence: {
      std::vector<ValuePtr> items;
      std::vector<const OnyxValue*> ptrs;
      for (const TestValue& e : v.elements) {
        items.push_back(to_onyx_value(e, where));
        ptrs.push_back(items.back().get());
      }
      check(onyx_value_create_sequence(ONYX_DTYPE_UNDEFINED, ptrs.data(), ptrs.size(), &out), where);
      break;
    }
    case TestValue::Kind::kOptional: {
      ValuePtr element = v.elements.empty() ? nullptr : to_onyx_value(v.elements[0], where);
      check(onyx_value_create_optional(element.get(), &out), where);
      break;
    }
    case TestValue::Kind::kMap: throw CaseError(where + ": maps cannot be fed through the C API");
  }
  return ValuePtr(out);
}

const char* kind_name(int32_t kind) {
  switch (kind) {
    case ONYX_VALUE_SEQUENCE: return "sequence";
    case ONYX_VALUE_OPTIONAL: return "optional";
    case ONYX_VALUE_MAP: return "map";
    default: return "tensor";
  }
}

// A produced tensor against expected strings: type, shape, then each element.
std::string compare_strings(const HostTensor& expected, const OnyxTensor* got) {
  if (onyx_tensor_dtype(got) != onnx::TensorProto::STRING)
    return std::string("expected a string tensor, got ") + dtype_name(onyx_tensor_dtype(got));
  std::vector<int64_t> dims(onyx_tensor_dims(got), onyx_tensor_dims(got) + onyx_tensor_rank(got));
  if (dims != expected.dims) return "shape differs from the expected";
  for (size_t i = 0; i < expected.strings.size(); ++i) {
    const char* data = nullptr;
    size_t length = 0;
    check(onyx_tensor_string(got, int64_t(i), &data, &length), "output string");
    if (std::string(data, length) != expected.strings[i])
      return "element " + std::to_string(i) + " is '" + std::string(data, length) + "', expected '" +
             expected.strings[i] + "'";
  }
  return "";
}

// Compares a produced value with the expected one, item by item; "" when
// they match, else what differs. `max_error` takes the largest tensor error.
std::string compare_value(const TestValue& expected, const OnyxValue* got, const std::string& op,
                          double& max_error) {
  const int32_t want = expected.kind == TestValue::Kind::kSequence   ? ONYX_VALUE_SEQUENCE
                       : expected.kind == TestValue::Kind::kOptional ? ONYX_VALUE_OPTIONAL
                       : expected.kind == TestValue::Kind::kMap      ? ONYX_VALUE_MAP
                                                                     : ONYX_VALUE_TENSOR;
  if (onyx_value_kind(got) != want)
    return std::string("expected a ") + kind_name(want) + ", got a " + kind_name(onyx_value_kind(got));
  if (want == ONYX_VALUE_TENSOR) {
    OnyxTensor* raw = nullptr;
    check(onyx_value_tensor(got, &raw), "output tensor");
    TensorPtr t(raw);
    if (expected.tensor.dtype == onnx::TensorProto::STRING) return compare_strings(expected.tensor, raw);
    Comparison cmp = compare_tensor(expected.tensor, onyx_tensor_dtype(raw), onyx_tensor_dims(raw),
                                    onyx_tensor_rank(raw), onyx_tensor_data(raw),
                                    tolerance_for(op, expected.tensor.dtype));
    max_error = std::max(max_error, cmp.max_error);
    return cmp.ok ? std::string() : cmp.message;
  }
  if (onyx_value_count(got) != expected.elements.size())
    return std::string(kind_name(want)) + " holds " + std::to_string(onyx_value_count(got)) + " items, expected " +
           std::to_string(expected.elements.size());
  for (size_t i = 0; i < expected.elements.size(); ++i) {
    OnyxValue* raw = nullptr;
    check(onyx_value_item(got, i, &raw), "output item");
    ValuePtr item(raw);
    std::string why = compare_value(expected.elements[i], item.get(), op, max_error);
    if (!why.empty()) return "item " + std::to_string(i) + ": " + why;
  }
  return "";
}

// Session creation failed because the provider declined a node (its
// get_capability said no, with a reason the message carries): the runtime
// reports that as UNIMPLEMENTED "no provider supports op ...", prefixed by
// the control-flow node when the node is in a subgraph. A node the provider
// claimed and then could not create or run fails with another message.
bool is_decline(const OnyxStatus* status) {
  return onyx_status_code(status) == ONYX_STATUS_UNIMPLEMENTED &&
         std::string(onyx_status_message(status)).find("no provider supports op ") != std::string::npos;
}

std::vector<std::string> data_sets(const std::string& dir) {
  std::vector<std::string> sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path().string());
  std::sort(sets.begin(), sets.end());
  return sets;
}

}  // namespace

std::vector<NodeCase> find_node_cases(const std::vector<std::string>& corpora, const std::regex& filter) {
  std::vector<NodeCase> cases;
  for (const std::string& corpus : corpora) {
    std::error_code ec;
    if (!fs::is_directory(corpus, ec))
      throw std::runtime_error("corpus folder '" + corpus + "' does not exist or is not a folder");
    const fs::path folder = fs::weakly_canonical(corpus, ec);
    const std::string prefix =
        corpora.size() > 1 ? (folder.parent_path().filename() / folder.filename()).string() + "/" : "";
    for (const auto& entry : fs::directory_iterator(corpus)) {
      const std::string name = prefix + entry.path().filename().string();
      if (!entry.is_directory() || !fs::exists(entry.path() / "model.onnx")) continue;
      if (!std::regex_search(name, filter)) continue;
      cases.push_back({name, entry.path().string()});
    }
  }
  std::sort(cases.begin(), cases.end(), [](const NodeCase& a, const NodeCase& b) { return a.name < b.name; });
  return cases;
}

std::string node_case_op(const NodeCase& c) {
  onnx::ModelProto model = read_model(c.dir + "/model.onnx");
  if (model.graph().node_size() == 1) return model.graph().node(0).op_type();
  const std::string folder = fs::path(c.dir).filename().string();
  const size_t expanded = folder.find("_expanded");
  if (expanded != std::string::npos) {
    fs::path sibling = fs::path(c.dir).parent_path() / folder.substr(0, expanded) / "model.onnx";
    std::error_code ec;
    if (fs::exists(sibling, ec)) {
      onnx::ModelProto original = read_model(sibling.string());
      if (original.graph().node_size() >= 1) return original.graph().node(0).op_type();
    }
  }
  return model.graph().node_size() ? model.graph().node(0).op_type() : std::string();
}

namespace {

void run_case_body(OnyxEnv* env, const std::string& provider, const NodeCase& c, RunResult& result) {
  const std::string model_path = c.dir + "/model.onnx";
  onnx::ModelProto model = read_model(model_path);

  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::vector<const onnx::ValueInfoProto*> inputs, outputs;
  for (const auto& in : model.graph().input())
    if (!initializers.count(in.name())) inputs.push_back(&in);
  for (const auto& out : model.graph().output()) outputs.push_back(&out);

  for (const auto* list : {&inputs, &outputs}) {
    for (const auto* value : *list) {
      std::string limit = type_limit(value->type());
      if (limit.empty()) continue;
      result.status = RunStatus::kUnsupported;
      result.error = "unsupported: " + limit + (list == &inputs ? " inputs" : " outputs") +
                     " ('" + value->name() + "') are not carried by the C API yet";
      return;
    }
  }

  OnyxSessionOptions* raw_options = nullptr;
  check(onyx_session_options_create(&raw_options), "session options");
  std::unique_ptr<OnyxSessionOptions, OptionsDeleter> options(raw_options);
  const char* no_keys[1] = {nullptr};
  check(onyx_session_options_append_provider(options.get(), provider.c_str(), no_keys, no_keys, 0),
        "provider '" + provider + "'");
  check(onyx_session_options_set_fallback(options.get(), ONYX_FALLBACK_FAIL), "fallback");
  check(onyx_session_options_set_intra_op_threads(options.get(), 1), "threads");
  OnyxSession* raw_session = nullptr;
  if (OnyxStatus* st = onyx_session_create(env, model_path.c_str(), options.get(), &raw_session)) {
    StatusGuard guard{st};
    if (onyx_status_code(st) == ONYX_STATUS_UNAVAILABLE) {  // no device here: not the plugin's fault
      result.status = RunStatus::kUnsupported;
      result.error = std::string("device unavailable: ") + onyx_status_message(st);
      return;
    }
    if (is_decline(st)) {
      result.status = RunStatus::kDeclined;
      result.error = std::string("declined: ") + onyx_status_message(st);
      return;
    }
    throw CaseError(std::string("session creation: ") + onyx_status_message(st));
  }
  std::unique_ptr<OnyxSession, SessionDeleter> session(raw_session);

  std::vector<std::string> output_names;
  for (const auto* out : outputs) output_names.push_back(out->name());
  std::vector<const char*> output_name_ptrs;
  for (const auto& n : output_names) output_name_ptrs.push_back(n.c_str());

  const std::vector<std::string> sets = data_sets(c.dir);
  if (sets.empty()) throw CaseError(c.dir + " has no test_data_set_* folder");
  for (const std::string& set : sets) {
    const std::string set_name = fs::path(set).filename().string();
    std::vector<ValuePtr> input_values;
    std::vector<const char*> input_names;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const std::string file = set + "/input_" + std::to_string(k) + ".pb";
      if (!fs::exists(file)) break;  // trailing optional inputs left out
      TestValue value = read_value_file(file, inputs[k]->type());
      input_values.push_back(to_onyx_value(value, file));
      input_names.push_back(inputs[k]->name().c_str());
    }
    std::vector<OnyxValue*> produced(outputs.size(), nullptr);
    std::vector<const OnyxValue*> input_ptrs;
    for (const auto& v : input_values) input_ptrs.push_back(v.get());
    check(onyx_session_run_values(session.get(), input_names.data(), input_ptrs.data(), input_ptrs.size(),
                                  output_name_ptrs.data(), output_name_ptrs.size(), produced.data()),
          "run (" + set_name + ")");
    std::vector<ValuePtr> owned;
    for (OnyxValue* v : produced) owned.emplace_back(v);
    for (size_t k = 0; k < outputs.size(); ++k) {
      const std::string file = set + "/output_" + std::to_string(k) + ".pb";
      if (!fs::exists(file)) continue;
      TestValue expected = read_value_file(file, outputs[k]->type());
      if (!owned[k]) throw CaseError("output '" + output_names[k] + "' was not produced");
      std::string why = compare_value(expected, owned[k].get(), result.op, result.max_error);
      if (!why.empty()) {
        result.status = RunStatus::kFailed;
        result.error = "output '" + output_names[k] + "' (" + set_name + "): " + why;
        return;
      }
    }
  }
  result.status = RunStatus::kPassed;
}

}  // namespace

RunResult run_node_case(OnyxEnv* env, const std::string& provider, const NodeCase& c) {
  RunResult result;
  try {
    result.op = node_case_op(c);
    run_case_body(env, provider, c, result);
  } catch (const std::exception& e) {
    result.status = RunStatus::kFailed;
    result.error = e.what();
  }
  return result;
}

}  // namespace onyx::conformance
