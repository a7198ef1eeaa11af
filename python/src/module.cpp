// module.cpp: the _onyx extension module. The Python package (onyx/) is the
// public face; this module mirrors the C API closely and stays small.
#include <nanobind/stl/string.h>

#include <map>

#include "bindings.h"

namespace onyx::python {

namespace {

// Status code -> exception class, registered by onyx/_errors.py at import.
// Plain references, never released: they live as long as the interpreter.
std::map<int, PyObject*>& error_types() {
  static auto* types = new std::map<int, PyObject*>;
  return *types;
}
PyObject* base_error = nullptr;

void set_error_types(nb::handle base, nb::dict by_code) {
  base_error = base.inc_ref().ptr();
  for (auto [code, type] : by_code) error_types()[nb::cast<int>(code)] = type.inc_ref().ptr();
}

}  // namespace

void fail(OnyxStatusCode code, const std::string& message) {
  auto it = error_types().find(int(code));
  PyObject* type = it != error_types().end() ? it->second : base_error ? base_error : PyExc_RuntimeError;
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

void check(OnyxStatus* status) {
  if (!status) return;
  OnyxStatusCode code = onyx_status_code(status);
  std::string message = onyx_status_message(status);
  onyx_status_release(status);
  fail(code, message);
}

}  // namespace onyx::python

NB_MODULE(_onyx, m) {
  using namespace onyx::python;
  m.doc() = "Onyx's C API for the onyx package (use onyx, not this module)";
  m.def("version", [] { return std::string(onyx_version()); });
  m.def("_set_error_types", &set_error_types);
  m.def("dtype_name", &dtype_name);
  bind_inference(m);
  bind_training(m);
}
