// inference.cpp: Env and Session of the _onyx module (onyx_c_api.h).
// onyx/_inference.py builds the ONNX Runtime-compatible API on them.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdio>
#include <map>
#include <optional>
#include <utility>

#include "bindings.h"

namespace onyx::python {

namespace {

struct Metadata {
  std::string name;
  int32_t dtype;
  std::optional<std::vector<int64_t>> dims;  // none: rank unknown; -1: a dim unknown
  int32_t kind;                              // OnyxValueKind
};

// onyx_run_options_*: a run's log tag and its cancel switch (cancel() may
// be called from any thread, also while the run holds no GIL).
class RunOptions {
 public:
  RunOptions() {
    OnyxRunOptions* raw = nullptr;
    check(onyx_run_options_create(&raw));
    raw_.reset(raw);
  }
  void set_tag(const std::string& tag) { check(onyx_run_options_set_tag(raw_.get(), tag.c_str())); }
  void cancel() { onyx_run_options_cancel(raw_.get()); }
  const OnyxRunOptions* get() const { return raw_.get(); }

 private:
  std::unique_ptr<OnyxRunOptions, void (*)(OnyxRunOptions*)> raw_{nullptr, onyx_run_options_release};
};

class Session {
 public:
  // `model` is a path (str) or the serialized model (bytes).
  Session(Env& env, nb::object model, const ProviderList& providers, int fallback, size_t threads,
          bool reduced_precision, int optimization, int device_policy)
      : env_(env.get()) {
    OptionsPtr options =
        make_session_options(providers, fallback, threads, reduced_precision, optimization, device_policy);
    const OnyxSessionOptions* raw = options.get();
    OnyxSession* session = nullptr;
    OnyxStatus* status = nullptr;
    if (nb::isinstance<nb::bytes>(model)) {
      nb::bytes bytes = nb::borrow<nb::bytes>(model);
      nb::gil_scoped_release unlocked;
      status = onyx_session_create_from_buffer(env_.get(), bytes.c_str(), bytes.size(), raw, &session);
    } else {
      std::string path = nb::str(model).c_str();
      nb::gil_scoped_release unlocked;
      status = onyx_session_create(env_.get(), path.c_str(), raw, &session);
    }
    check(status);
    session_.reset(session);
    for (bool input : {true, false}) {
      size_t n = input ? onyx_session_input_count(session) : onyx_session_output_count(session);
      for (size_t k = 0; k < n; ++k) {
        OnyxValueMetadata m{};
        m.struct_size = sizeof m;
        check(input ? onyx_session_input_metadata(session, k, &m) : onyx_session_output_metadata(session, k, &m));
        Metadata md{m.name, m.dtype, std::nullopt, m.kind};
        if (m.rank >= 0) md.dims = std::vector<int64_t>(m.dims, m.dims + m.rank);
        values_ = values_ || m.kind != ONYX_VALUE_TENSOR || m.dtype == ONYX_DTYPE_STRING;
        (input ? inputs_ : outputs_).push_back(std::move(md));
      }
    }
  }

  std::vector<std::tuple<std::string, int32_t, std::optional<std::vector<int64_t>>, int32_t>> metadata(
      bool input) const {
    std::vector<std::tuple<std::string, int32_t, std::optional<std::vector<int64_t>>, int32_t>> out;
    for (const auto& m : input ? inputs_ : outputs_) out.emplace_back(m.name, m.dtype, m.dims, m.kind);
    return out;
  }

  // Runs with `feed` (name -> array); returns the outputs named (all of them,
  // in model order, for None) as numpy arrays. The GIL is released while the
  // model runs, so other Python threads (and other runs) go on.
  nb::list run(std::optional<std::vector<std::string>> output_names, nb::dict feed, const RunOptions* options) {
    if (values_) return run_values(output_names, feed, options);
    BorrowedInputs inputs;
    std::vector<std::string> names;
    for (auto [key, value] : feed) {
      std::string name = input_name(key);
      borrow_input(inputs, name, value, declared_input(name).dtype);
      names.push_back(std::move(name));
    }
    std::vector<const char*> in_names, out_names;
    for (const auto& n : names) in_names.push_back(n.c_str());
    if (output_names)
      for (const auto& n : *output_names) out_names.push_back(n.c_str());
    const size_t count = output_names ? output_names->size() : outputs_.size();
    std::vector<OnyxTensor*> outputs(count, nullptr);
    std::vector<const OnyxTensor*> in = inputs.raw();
    OnyxStatus* status = nullptr;
    {
      nb::gil_scoped_release unlocked;
      status = onyx_session_run_with_options(session_.get(), options ? options->get() : nullptr, in_names.data(),
                                             in.data(), in.size(), output_names ? out_names.data() : nullptr, count,
                                             outputs.data());
    }
    check(status);
    std::vector<TensorPtr> owned;
    for (OnyxTensor* t : outputs) owned.emplace_back(t);
    nb::list result;
    for (auto& t : owned) result.append(to_numpy(std::move(t)));
    return result;
  }

  // As run, for models with sequence, optional or string inputs or outputs:
  // through OnyxValues (values.cpp).
  nb::list run_values(const std::optional<std::vector<std::string>>& output_names, nb::dict feed,
                      const RunOptions* options) {
    BorrowedInputs inputs;  // numeric arrays inside the values, kept alive for the run
    std::vector<std::string> names;
    std::vector<ValuePtr> values;
    for (auto [key, value] : feed) {
      std::string name = input_name(key);
      const Metadata& m = declared_input(name);
      values.push_back(value_from_python(inputs, name, value, m.kind, m.dtype));
      names.push_back(std::move(name));
    }
    std::vector<const char*> in_names, out_names;
    for (const auto& n : names) in_names.push_back(n.c_str());
    if (output_names)
      for (const auto& n : *output_names) out_names.push_back(n.c_str());
    std::vector<const OnyxValue*> in;
    for (const auto& v : values) in.push_back(v.get());
    const size_t count = output_names ? output_names->size() : outputs_.size();
    std::vector<OnyxValue*> outputs(count, nullptr);
    OnyxStatus* status = nullptr;
    {
      nb::gil_scoped_release unlocked;
      status = onyx_session_run_values_with_options(session_.get(), options ? options->get() : nullptr,
                                                    in_names.data(), in.data(), in.size(),
                                                    output_names ? out_names.data() : nullptr, count, outputs.data());
    }
    std::vector<ValuePtr> owned;
    for (OnyxValue* v : outputs) owned.emplace_back(v);
    check(status);
    nb::list result;
    for (auto& v : owned) result.append(value_to_python(std::move(v)));
    return result;
  }

  void start_profiling() { check(onyx_session_start_profiling(session_.get())); }
  std::string end_profiling() {
    char* json = nullptr;
    check(onyx_session_end_profiling(session_.get(), &json));
    return take_string(json);
  }

  std::string partition_report() const {
    char* json = nullptr;
    check(onyx_session_partition_report(session_.get(), &json));
    return take_string(json);
  }

  // The memory plan for input shapes (name -> dims); declared shapes for the rest.
  std::string memory_report(const std::map<std::string, std::vector<int64_t>>& shapes) {
    std::vector<const char*> names;
    std::vector<const int64_t*> dims;
    std::vector<size_t> ranks;
    for (const auto& [name, d] : shapes) {
      names.push_back(name.c_str());
      dims.push_back(d.data());
      ranks.push_back(d.size());
    }
    char* json = nullptr;
    check(onyx_session_memory_report(session_.get(), names.data(), dims.data(), ranks.data(), names.size(), &json));
    return take_string(json);
  }

 private:
  static std::string input_name(nb::handle key) {
    if (!nb::isinstance<nb::str>(key)) throw nb::type_error("feed keys must be input names (str)");
    return nb::cast<std::string>(key);
  }

  const Metadata& declared_input(const std::string& name) const {
    for (const auto& m : inputs_)
      if (m.name == name) return m;
    std::string list;
    for (const auto& m : inputs_) list += (list.empty() ? "" : ", ") + m.name;
    fail(ONYX_STATUS_INVALID_ARGUMENT,
         "input '" + name + "' is not an input of the model (its inputs: " + (list.empty() ? "none" : list) + ")");
  }

  EnvPtr env_;  // outlives the session
  std::unique_ptr<OnyxSession, void (*)(OnyxSession*)> session_{nullptr, onyx_session_release};
  std::vector<Metadata> inputs_, outputs_;
  bool values_ = false;  // some input or output is a sequence, an optional or a string tensor
};

}  // namespace

void log_to_stderr(void*, int32_t level, const char* message) {
  static const char* const names[] = {"debug", "info", "warning", "error"};
  std::fprintf(stderr, "onyx [%s] %s\n", level >= 0 && level <= 3 ? names[level] : "?", message);
}

OptionsPtr make_session_options(const ProviderList& providers, int fallback, size_t threads, bool reduced_precision,
                                int optimization, int device_policy) {
  OnyxSessionOptions* raw = nullptr;
  check(onyx_session_options_create(&raw));
  OptionsPtr options(raw);
  for (const auto& [name, kv] : providers) {
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : kv) {
      keys.push_back(k.c_str());
      values.push_back(v.c_str());
    }
    check(onyx_session_options_append_provider(raw, name.c_str(), keys.data(), values.data(), keys.size()));
  }
  check(onyx_session_options_set_fallback(raw, OnyxFallbackPolicy(fallback)));
  check(onyx_session_options_set_intra_op_threads(raw, threads));
  check(onyx_session_options_set_allow_reduced_precision(raw, reduced_precision));
  check(onyx_session_options_set_graph_optimization(raw, OnyxGraphOptimization(optimization)));
  if (device_policy != ONYX_DEVICE_POLICY_NONE)
    check(onyx_session_options_set_device_policy(raw, OnyxDevicePolicy(device_policy)));
  return options;
}

void bind_inference(nb::module_& m) {
  nb::class_<Env>(m, "Env")
      .def(nb::init<>())
      .def("add_provider_dir", &Env::add_provider_dir)
      .def("providers_json", &Env::providers_json, "[{name, path, version, abi, available, reason, devices}] as JSON")
      .def("set_log_level", &Env::set_log_level);
  nb::class_<RunOptions>(m, "RunOptions")
      .def(nb::init<>())
      .def("set_tag", &RunOptions::set_tag, nb::arg("tag"))
      .def("cancel", &RunOptions::cancel, "stops the runs using these options now in progress");
  nb::class_<Session>(m, "Session")
      .def(nb::init<Env&, nb::object, const ProviderList&, int, size_t, bool, int, int>(), nb::arg("env"),
           nb::arg("model"), nb::arg("providers"), nb::arg("fallback"), nb::arg("threads"),
           nb::arg("reduced_precision"), nb::arg("optimization") = int(ONYX_GRAPH_OPTIMIZATION_ALL),
           nb::arg("device_policy") = int(ONYX_DEVICE_POLICY_NONE))
      .def("metadata", &Session::metadata, nb::arg("input"))
      .def("run", &Session::run, nb::arg("output_names").none(), nb::arg("feed"),
           nb::arg("run_options").none() = nb::none())
      .def("start_profiling", &Session::start_profiling)
      .def("end_profiling", &Session::end_profiling, "the Chrome trace of the runs since start_profiling")
      .def("partition_report", &Session::partition_report)
      .def("memory_report", &Session::memory_report, nb::arg("shapes"));
}

}  // namespace onyx::python
