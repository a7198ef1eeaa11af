// bindings.h: what the parts of the _onyx extension share: turning an
// OnyxStatus into the Python exception of its code, and arrays to and from
// OnyxTensors (arrays.cpp).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>  // in every part: nb::cast<std::string> must mean one thing
#include <onyx/onyx_training_c_api.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace onyx::python {

namespace nb = nanobind;

// Raises the Python exception registered for the status's code (module.cpp)
// when `status` is an error; releases it either way. Needs the GIL.
void check(OnyxStatus* status);
// Raises onyx.OnyxError subclass for `code` with `message`.
[[noreturn]] void fail(OnyxStatusCode code, const std::string& message);

// A char* the C API handed over, as a string (released).
inline std::string take_string(char* s) {
  std::string out = s ? s : "";
  onyx_string_release(s);
  return out;
}

void bind_inference(nb::module_& m);
void bind_training(nb::module_& m);

// The logger Env.set_log_level installs: "onyx [level] message" on stderr.
void log_to_stderr(void*, int32_t level, const char* message);

// One environment per onyx package import (onyx/_inference.py), shared by
// every session made from it and kept alive by them.
using EnvPtr = std::shared_ptr<OnyxEnv>;

class Env {
 public:
  Env() {
    OnyxEnv* env = nullptr;
    check(onyx_env_create(&env));
    env_ = EnvPtr(env, onyx_env_release);
  }
  void add_provider_dir(const std::string& dir) { check(onyx_env_add_provider_dir(env_.get(), dir.c_str())); }
  std::string providers_json() {
    char* json = nullptr;
    check(onyx_env_list_providers(env_.get(), &json));
    std::string out = json;
    onyx_string_release(json);
    return out;
  }
  // Messages at `min_level` (an OnyxLogLevel) and above go to stderr.
  void set_log_level(int32_t min_level) { check(onyx_env_set_logger(env_.get(), log_to_stderr, nullptr, min_level)); }
  const EnvPtr& get() const { return env_; }

 private:
  EnvPtr env_;
};

// Session options from what the Python layer passes: providers in priority
// order with their options, an OnyxFallbackPolicy, intra-op threads (0: one
// per core), reduced precision.
using ProviderList = std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>;
struct OptionsDeleter {
  void operator()(OnyxSessionOptions* o) const { onyx_session_options_release(o); }
};
using OptionsPtr = std::unique_ptr<OnyxSessionOptions, OptionsDeleter>;
// optimization: an OnyxGraphOptimization level (0 off, 1 basic, 2 all);
// device_policy: an OnyxDevicePolicy (with no providers: the session chooses).
OptionsPtr make_session_options(const ProviderList& providers, int fallback, size_t threads, bool reduced_precision,
                                int optimization = ONYX_GRAPH_OPTIMIZATION_ALL,
                                int device_policy = ONYX_DEVICE_POLICY_NONE);

// An OnyxTensor owned by a unique_ptr.
struct TensorDeleter {
  void operator()(OnyxTensor* t) const { onyx_tensor_release(t); }
};
using TensorPtr = std::unique_ptr<OnyxTensor, TensorDeleter>;

// Input arrays seen as tensors without copies: each tensor borrows the
// memory of the array it was made from, which `arrays` keeps alive.
struct BorrowedInputs {
  std::vector<nb::ndarray<nb::ro>> arrays;
  std::vector<TensorPtr> tensors;
  std::vector<const OnyxTensor*> raw() const;
};

// Adds `value` (anything with the buffer protocol or DLPack on the CPU: numpy
// arrays, torch tensors) as the input `name`. `expected` is the element type
// the model declares (0 when unknown): raw views are taken for the types
// numpy lacks (uint16 for bfloat16, uint8 for the 8-bit floats), and the 2-
// and 4-bit types come one element per byte (int8/uint8) and are packed (a
// copy). Raises
// TypeError/ValueError naming the input for what cannot be fed: strings and
// objects, a non-contiguous array, memory on another device.
void borrow_input(BorrowedInputs& inputs, const std::string& name, nb::handle value, int32_t expected);

// A numpy array over the tensor's memory: the array owns the tensor and
// releases it when collected. bfloat16 comes out as a uint16 view, the 8-bit
// floats as uint8 views; the packed 2- and 4-bit types are unpacked into a new
// array, one element per byte (int8 for int4/int2, uint8 for the others).
nb::object to_numpy(TensorPtr tensor);

// Sequences, optionals and string tensors (values.cpp). An OnyxValue owned by
// a unique_ptr.
struct ValueDeleter {
  void operator()(OnyxValue* v) const { onyx_value_release(v); }
};
using ValuePtr = std::unique_ptr<OnyxValue, ValueDeleter>;

// The input `name` as a value of the declared OnyxValueKind `kind`: a list or
// tuple is a sequence, None an empty optional, a numpy array of str (or of
// Python objects holding str/bytes) a STRING tensor, anything else an array
// borrowed as borrow_input does (kept alive by `inputs`). Raises
// TypeError/ValueError naming the input.
ValuePtr value_from_python(BorrowedInputs& inputs, const std::string& name, nb::handle value, int32_t kind,
                           int32_t dtype);
// A run's output: a numpy array (STRING tensors as arrays of str, dtype
// object, as ONNX Runtime returns them), a list for a sequence, None for an
// empty optional.
nb::object value_to_python(ValuePtr value);

// "float32", "bfloat16", ... (onyx_dtype.h's names).
std::string dtype_name(int32_t dtype);

}  // namespace onyx::python
