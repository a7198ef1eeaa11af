// onyx.hpp: a thin header-only C++ wrapper over onyx_c_api.h. RAII handles;
// failures throw onyx::Error (C++ side only: nothing throws across the C API).
#pragma once

#include <onyx/onyx_c_api.h>

#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace onyx {

class Error : public std::runtime_error {
 public:
  Error(OnyxStatusCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  OnyxStatusCode code() const { return code_; }

 private:
  OnyxStatusCode code_;
};

// Throws if `status` is an error; releases it either way.
inline void check(OnyxStatus* status) {
  if (!status) return;
  OnyxStatusCode code = onyx_status_code(status);
  std::string message = onyx_status_message(status);
  onyx_status_release(status);
  throw Error(code, message);
}

namespace detail {
template <typename T, void (*Release)(T*)>
struct Deleter {
  void operator()(T* p) const { Release(p); }
};
inline std::string take_string(char* s) {
  std::string out = s ? s : "";
  onyx_string_release(s);
  return out;
}
}  // namespace detail

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(OnyxTensor* raw) : raw_(raw) {}
  static Tensor zeros(OnyxDataType dtype, std::vector<int64_t> dims) {
    OnyxTensor* t = nullptr;
    check(onyx_tensor_create(dtype, dims.data(), dims.size(), &t));
    return Tensor(t);
  }
  template <typename T>
  static Tensor from(OnyxDataType dtype, std::vector<int64_t> dims, std::span<const T> values) {
    Tensor t = zeros(dtype, std::move(dims));
    if (values.size_bytes() != t.byte_size()) throw Error(ONYX_STATUS_INVALID_ARGUMENT, "size mismatch");
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  // A STRING tensor holding copies of `values` (valid UTF-8 each; throws
  // naming the element otherwise).
  static Tensor strings(const std::vector<std::string>& values, std::vector<int64_t> dims) {
    std::vector<const char*> data;
    std::vector<size_t> lengths;
    for (const std::string& s : values) {
      data.push_back(s.data());
      lengths.push_back(s.size());
    }
    OnyxTensor* t = nullptr;
    check(onyx_tensor_create_strings(data.data(), lengths.data(), dims.data(), dims.size(), &t));
    return Tensor(t);
  }
  // Element `index` (row-major) of a STRING tensor.
  std::string string_at(int64_t index) const {
    const char* data = nullptr;
    size_t length = 0;
    check(onyx_tensor_string(raw_.get(), index, &data, &length));
    return std::string(data, length);
  }
  OnyxDataType dtype() const { return OnyxDataType(onyx_tensor_dtype(raw_.get())); }
  std::vector<int64_t> shape() const {
    const int64_t* d = onyx_tensor_dims(raw_.get());
    return {d, d + onyx_tensor_rank(raw_.get())};
  }
  int64_t size() const { return onyx_tensor_element_count(raw_.get()); }
  size_t byte_size() const { return onyx_tensor_byte_size(raw_.get()); }
  template <typename T>
  T* data() { return static_cast<T*>(onyx_tensor_data(raw_.get())); }
  // The provider whose device holds the bytes; "" for host memory.
  std::string device() const {
    const char* d = onyx_tensor_device(raw_.get());
    return d ? d : "";
  }
  // Copies all of `src` (same dtype and shape) into this tensor, between host
  // and device memory as needed (onyx_tensor_copy).
  void copy_from(const Tensor& src) { check(onyx_tensor_copy(raw_.get(), src.get())); }
  OnyxTensor* get() const { return raw_.get(); }

 private:
  std::unique_ptr<OnyxTensor, detail::Deleter<OnyxTensor, onyx_tensor_release>> raw_;
};

// A tensor, sequence or optional (onyx_c_api.h, "values"). Immutable once
// made; what it holds is shared, not copied.
class Value {
 public:
  Value() = default;
  explicit Value(OnyxValue* raw) : raw_(raw) {}
  // Shares the tensor's memory: don't write to the tensor while the value lives.
  static Value tensor(const Tensor& t) {
    OnyxValue* v = nullptr;
    check(onyx_value_create_tensor(t.get(), &v));
    return Value(v);
  }
  // Tensors of one element type (UNDEFINED: item 0's); throws on a mismatch.
  static Value sequence(const std::vector<Value>& items, OnyxDataType elem_dtype = ONYX_DTYPE_UNDEFINED) {
    std::vector<const OnyxValue*> raw;
    for (const Value& item : items) raw.push_back(item.get());
    OnyxValue* v = nullptr;
    check(onyx_value_create_sequence(elem_dtype, raw.data(), raw.size(), &v));
    return Value(v);
  }
  // An optional holding `element`, or an empty one for nullptr.
  static Value optional(const Value* element) {
    OnyxValue* v = nullptr;
    check(onyx_value_create_optional(element ? element->get() : nullptr, &v));
    return Value(v);
  }
  // A map from 1-D keys (int64 or STRING) and values of one length; throws
  // naming a repeated key.
  static Value map(const Tensor& keys, const Tensor& values) {
    OnyxValue* v = nullptr;
    check(onyx_value_create_map(keys.get(), values.get(), &v));
    return Value(v);
  }
  // A map's keys and values (sharing its memory; read them, don't write).
  std::pair<Tensor, Tensor> map_columns() const {
    OnyxTensor* k = nullptr;
    OnyxTensor* v = nullptr;
    check(onyx_value_map_columns(raw_.get(), &k, &v));
    return {Tensor(k), Tensor(v)};
  }
  OnyxValueKind kind() const { return OnyxValueKind(onyx_value_kind(raw_.get())); }
  OnyxDataType elem_dtype() const { return OnyxDataType(onyx_value_elem_dtype(raw_.get())); }
  // Sequence items; 1 or 0 for an optional.
  size_t count() const { return onyx_value_count(raw_.get()); }
  Value item(size_t index) const {
    OnyxValue* v = nullptr;
    check(onyx_value_item(raw_.get(), index, &v));
    return Value(v);
  }
  // The tensor of a tensor value, sharing its memory (read it; don't write).
  Tensor as_tensor() const {
    OnyxTensor* t = nullptr;
    check(onyx_value_tensor(raw_.get(), &t));
    return Tensor(t);
  }
  OnyxValue* get() const { return raw_.get(); }

 private:
  std::unique_ptr<OnyxValue, detail::Deleter<OnyxValue, onyx_value_release>> raw_;
};

class Env {
 public:
  Env() {
    OnyxEnv* e = nullptr;
    check(onyx_env_create(&e));
    raw_.reset(e);
  }
  void add_provider_dir(const std::string& dir) { check(onyx_env_add_provider_dir(raw_.get(), dir.c_str())); }
  std::string providers_json() {
    char* json = nullptr;
    check(onyx_env_list_providers(raw_.get(), &json));
    return detail::take_string(json);
  }
  // Sends this env's messages at `min_level` and above to `log` (an empty
  // function drops them all); see onyx_env_set_logger. `log` may run on
  // several threads at once; an exception it throws is swallowed.
  using LogFunction = std::function<void(OnyxLogLevel level, const std::string& message)>;
  void set_logger(LogFunction log, OnyxLogLevel min_level = ONYX_LOG_INFO) {
    auto next = log ? std::make_unique<LogFunction>(std::move(log)) : nullptr;
    check(onyx_env_set_logger(raw_.get(), next ? &Env::call_log : nullptr, next.get(), min_level));
    log_ = std::move(next);  // the previous function is no longer called
  }
  OnyxEnv* get() const { return raw_.get(); }

 private:
  static void call_log(void* user, int32_t level, const char* message) {
    try {
      (*static_cast<LogFunction*>(user))(OnyxLogLevel(level), message);
    } catch (...) {  // nothing may unwind into the C API
    }
  }
  std::unique_ptr<LogFunction> log_;  // outlives raw_ (members are destroyed in reverse)
  std::unique_ptr<OnyxEnv, detail::Deleter<OnyxEnv, onyx_env_release>> raw_;
};

class SessionOptions {
 public:
  SessionOptions() {
    OnyxSessionOptions* o = nullptr;
    check(onyx_session_options_create(&o));
    raw_.reset(o);
  }
  SessionOptions& provider(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& options = {}) {
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : options) {
      keys.push_back(k.c_str());
      values.push_back(v.c_str());
    }
    check(onyx_session_options_append_provider(raw_.get(), name.c_str(), keys.data(), values.data(),
                                               keys.size()));
    return *this;
  }
  SessionOptions& fallback(OnyxFallbackPolicy policy) {
    check(onyx_session_options_set_fallback(raw_.get(), policy));
    return *this;
  }
  // onyx_session_options_set_device_policy: devices chosen for the application.
  SessionOptions& device_policy(OnyxDevicePolicy policy) {
    check(onyx_session_options_set_device_policy(raw_.get(), policy));
    return *this;
  }
  SessionOptions& threads(size_t n) {
    check(onyx_session_options_set_intra_op_threads(raw_.get(), n));
    return *this;
  }
  SessionOptions& allow_reduced_precision(bool allow = true) {
    check(onyx_session_options_set_allow_reduced_precision(raw_.get(), allow));
    return *this;
  }
  SessionOptions& graph_optimization(OnyxGraphOptimization level) {
    check(onyx_session_options_set_graph_optimization(raw_.get(), level));
    return *this;
  }
  // onyx_session_options_set_host_memory_limit; 0: the machine's memory.
  SessionOptions& host_memory_limit(size_t bytes) {
    check(onyx_session_options_set_host_memory_limit(raw_.get(), bytes));
    return *this;
  }
  // Runs in a worker process (onyx_session_options_set_isolation); 0: no run timeout.
  SessionOptions& isolate(bool on = true, double run_timeout_seconds = 0) {
    check(onyx_session_options_set_isolation(raw_.get(), on, run_timeout_seconds));
    return *this;
  }
  // Compiled-partition cache folder (onyx_session_options_set_compiled_cache); "" = off.
  SessionOptions& compiled_cache(const std::string& folder) {
    check(onyx_session_options_set_compiled_cache(raw_.get(), folder.c_str()));
    return *this;
  }
  const OnyxSessionOptions* get() const { return raw_.get(); }

 private:
  std::unique_ptr<OnyxSessionOptions, detail::Deleter<OnyxSessionOptions, onyx_session_options_release>> raw_;
};

struct ValueMetadata {
  std::string name;
  OnyxDataType dtype;
  int32_t rank;
  std::vector<int64_t> dims;
  OnyxValueKind kind = ONYX_VALUE_TENSOR;
};

// A run's tag (prefixed to its log lines) and a switch that cancels the runs
// made with it (onyx_run_options_*). cancel() is thread-safe; set_tag is not
// while runs use the options, which must outlive those runs.
class RunOptions {
 public:
  RunOptions() {
    OnyxRunOptions* o = nullptr;
    check(onyx_run_options_create(&o));
    raw_.reset(o);
  }
  RunOptions& tag(const std::string& tag) {
    check(onyx_run_options_set_tag(raw_.get(), tag.c_str()));
    return *this;
  }
  void cancel() { onyx_run_options_cancel(raw_.get()); }
  const OnyxRunOptions* get() const { return raw_.get(); }

 private:
  std::unique_ptr<OnyxRunOptions, detail::Deleter<OnyxRunOptions, onyx_run_options_release>> raw_;
};

class Session {
 public:
  Session(Env& env, const std::string& path, const SessionOptions& options = {}) {
    OnyxSession* s = nullptr;
    check(onyx_session_create(env.get(), path.c_str(), options.get(), &s));
    raw_.reset(s);
  }
  Session(Env& env, std::span<const std::byte> model, const SessionOptions& options = {}) {
    OnyxSession* s = nullptr;
    check(onyx_session_create_from_buffer(env.get(), model.data(), model.size(), options.get(), &s));
    raw_.reset(s);
  }
  std::vector<ValueMetadata> inputs() const { return metadata(true); }
  std::vector<ValueMetadata> outputs() const { return metadata(false); }

  // Runs with named inputs; returns the named outputs (all, in order, when
  // empty). `run_options` (may be null): the run's tag and cancel switch.
  std::vector<Tensor> run(const std::vector<std::pair<std::string, const Tensor*>>& inputs,
                          const std::vector<std::string>& output_names = {},
                          const RunOptions* run_options = nullptr) {
    std::vector<const char*> in_names, out_names;
    std::vector<const OnyxTensor*> in_tensors;
    for (const auto& [name, t] : inputs) {
      in_names.push_back(name.c_str());
      in_tensors.push_back(t->get());
    }
    for (const std::string& n : output_names) out_names.push_back(n.c_str());
    size_t count = output_names.empty() ? onyx_session_output_count(raw_.get()) : output_names.size();
    std::vector<OnyxTensor*> raw(count, nullptr);
    check(onyx_session_run_with_options(raw_.get(), run_options ? run_options->get() : nullptr, in_names.data(),
                                        in_tensors.data(), in_names.size(),
                                        output_names.empty() ? nullptr : out_names.data(), count, raw.data()));
    std::vector<Tensor> out;
    for (OnyxTensor* t : raw) out.emplace_back(t);
    return out;
  }
  // A tensor in the memory of this session's device of `provider`
  // (onyx_tensor_create_on_device); contents unspecified until written.
  Tensor tensor_on_device(const std::string& provider, OnyxDataType dtype, std::vector<int64_t> dims) {
    OnyxTensor* t = nullptr;
    check(onyx_tensor_create_on_device(raw_.get(), provider.c_str(), dtype, dims.data(), dims.size(), &t));
    return Tensor(t);
  }
  // As run, for models with sequence or optional inputs or outputs.
  std::vector<Value> run_values(const std::vector<std::pair<std::string, const Value*>>& inputs,
                                const std::vector<std::string>& output_names = {},
                                const RunOptions* run_options = nullptr) {
    std::vector<const char*> in_names, out_names;
    std::vector<const OnyxValue*> in_values;
    for (const auto& [name, v] : inputs) {
      in_names.push_back(name.c_str());
      in_values.push_back(v->get());
    }
    for (const std::string& n : output_names) out_names.push_back(n.c_str());
    size_t count = output_names.empty() ? onyx_session_output_count(raw_.get()) : output_names.size();
    std::vector<OnyxValue*> raw(count, nullptr);
    check(onyx_session_run_values_with_options(raw_.get(), run_options ? run_options->get() : nullptr,
                                               in_names.data(), in_values.data(), in_names.size(),
                                               output_names.empty() ? nullptr : out_names.data(), count, raw.data()));
    std::vector<Value> out;
    for (OnyxValue* v : raw) out.emplace_back(v);
    return out;
  }
  // Stops the runs now in progress at their next step (onyx_session_cancel_runs).
  void cancel_runs() { onyx_session_cancel_runs(raw_.get()); }
  std::string partition_report() const {
    char* json = nullptr;
    check(onyx_session_partition_report(raw_.get(), &json));
    return detail::take_string(json);
  }
  std::string memory_report() {
    char* json = nullptr;
    check(onyx_session_memory_report(raw_.get(), nullptr, nullptr, nullptr, 0, &json));
    return detail::take_string(json);
  }
  // Chrome-trace profiling of the runs between the two calls (onyx_session_start_profiling).
  void start_profiling() { check(onyx_session_start_profiling(raw_.get())); }
  std::string end_profiling() {
    char* json = nullptr;
    check(onyx_session_end_profiling(raw_.get(), &json));
    return detail::take_string(json);
  }
  OnyxSession* get() const { return raw_.get(); }

 private:
  std::vector<ValueMetadata> metadata(bool input) const {
    size_t n = input ? onyx_session_input_count(raw_.get()) : onyx_session_output_count(raw_.get());
    std::vector<ValueMetadata> out;
    for (size_t k = 0; k < n; ++k) {
      OnyxValueMetadata m{};
      m.struct_size = sizeof m;
      check(input ? onyx_session_input_metadata(raw_.get(), k, &m)
                  : onyx_session_output_metadata(raw_.get(), k, &m));
      out.push_back({m.name, OnyxDataType(m.dtype), m.rank,
                     m.rank > 0 ? std::vector<int64_t>(m.dims, m.dims + m.rank) : std::vector<int64_t>{},
                     OnyxValueKind(m.kind)});
    }
    return out;
  }
  std::unique_ptr<OnyxSession, detail::Deleter<OnyxSession, onyx_session_release>> raw_;
};

// Inputs and outputs kept across runs, on devices or in host memory
// (onyx_io_binding_*). Must not outlive its session; one run at a time.
class IoBinding {
 public:
  explicit IoBinding(Session& session) : session_(session.get()) {
    OnyxIoBinding* b = nullptr;
    check(onyx_io_binding_create(session_, &b));
    raw_.reset(b);
  }
  IoBinding& input(const std::string& name, const Tensor& tensor) {
    check(onyx_io_binding_bind_input(raw_.get(), name.c_str(), tensor.get()));
    return *this;
  }
  // Each run writes output `name` into `tensor` (same dtype and shape).
  IoBinding& output(const std::string& name, Tensor& tensor) {
    check(onyx_io_binding_bind_output(raw_.get(), name.c_str(), tensor.get()));
    return *this;
  }
  // Each run makes output `name` a new tensor on `provider`'s device ("": host).
  IoBinding& output_to_device(const std::string& name, const std::string& provider) {
    check(onyx_io_binding_bind_output_to_device(raw_.get(), name.c_str(),
                                                provider.empty() ? nullptr : provider.c_str()));
    return *this;
  }
  void run() { check(onyx_session_run_binding(session_, raw_.get())); }
  // The last run's result for output `name`.
  Tensor result(const std::string& name) const {
    OnyxTensor* t = nullptr;
    check(onyx_io_binding_output(raw_.get(), name.c_str(), &t));
    return Tensor(t);
  }

 private:
  OnyxSession* session_;
  std::unique_ptr<OnyxIoBinding, detail::Deleter<OnyxIoBinding, onyx_io_binding_release>> raw_;
};

}  // namespace onyx
