// c_api_internal.h: the C API's object definitions and its exception guard,
// shared by the inference API (c_api.cpp) and the training API
// (training_c_api.cpp), which both live in libonyx.
#pragma once

#include <onyx/onyx_c_api.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/abi_status.h"
#include "isolate/worker_process.h"
#include "session/run_options.h"
#include "session/session.h"

struct OnyxEnv {
  onyx::runtime::ProviderRegistry registry;
};
struct OnyxSessionOptions {
  onyx::runtime::SessionOptions options;
  bool isolate = false;           // onyx_session_options_set_isolation
  double run_timeout_s = 0;       // isolated runs only; 0: none
};
struct OnyxSession {
  // In-process always: metadata and reports. With isolation on, runs go to
  // `worker` (a child process with the same model and options) instead.
  std::unique_ptr<onyx::runtime::Session> session;
  std::unique_ptr<onyx::runtime::isolate::WorkerProcess> worker;
};
struct OnyxTensor {
  onyx::runtime::Tensor tensor;
  // The device whose memory holds the bytes (onyx_tensor_create_on_device);
  // null for host memory.
  std::shared_ptr<onyx::runtime::Device> device = nullptr;
};
struct OnyxRunOptions {
  onyx::runtime::RunOptions options;
};
// onyx_io_binding_*: the inputs and outputs of runs, by name.
struct OnyxIoBinding {
  OnyxSession* session = nullptr;
  std::vector<std::pair<std::string, OnyxTensor>> inputs;
  struct Output {
    std::string name;
    OnyxTensor target;  // tensor empty: a new tensor per run on `device` (null: host)
    OnyxTensor result;  // the last run's
  };
  std::vector<Output> outputs;
};
struct OnyxValue {
  onyx::runtime::Value value;
};

namespace onyx::runtime::capi {

// Runs fn (returning Status) and converts its result or any exception into
// an OnyxStatus*: nothing throws across the C API.
template <typename Fn>
OnyxStatus* guarded(Fn&& fn) noexcept {
  try {
    return onyx::runtime::make_abi_status(fn());
  } catch (const std::bad_alloc&) {
    return onyx::runtime::make_abi_status(Status(ONYX_STATUS_OUT_OF_MEMORY, "out of memory"));
  } catch (const std::exception& e) {
    return onyx::runtime::make_abi_status(onyx::runtime::internal_error(e.what()));
  } catch (...) {
    return onyx::runtime::make_abi_status(onyx::runtime::internal_error("unknown exception"));
  }
}

inline Status null_arg(const char* fn, const char* name) {
  return onyx::runtime::invalid_argument(std::string(fn) + ": " + name + " is NULL");
}

// onyx_session_run with device tensors among its inputs (device_c_api.cpp):
// the outputs named come back as host tensors.
Status run_device_inputs(OnyxSession* s, const std::vector<std::string>& input_names,
                         const std::vector<const OnyxTensor*>& inputs, const std::vector<std::string>& output_names,
                         std::vector<Tensor>* results);

// A malloc'd copy the caller frees with onyx_string_release.
inline char* copy_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (!out) throw std::bad_alloc();
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

}  // namespace onyx::runtime::capi
