// kernel_harness.h: runs ONE node on the current test's provider
// (test_providers.h): the plugin is loaded from disk and driven through the
// conformance ABI host (conformance/abi_host.h), the one host the tests use:
// get_capability, kernel_create, kernel_output_memory, kernel_compute on
// device memory, outputs copied back.
//
// Usage:
//
//   #include "kernel_harness.h"
//   using namespace onyx::test;
//
//   NodeSpec node("Add");                       // op_type; opset defaults to 17
//   node.opset = 14;
//   node.inputs = {make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
//                  make_tensor<float>({3}, {10, 20, 30})};
//   node.attr("some_int", int64_t{1}).attr("alpha", 0.5).attr("mode", "constant");
//   RunResult r = run_node(node);               // RunOptions{.threads = 4} etc.
//   ASSERT_TRUE(r.ok()) << r.error;
//   std::vector<float> y = r.outputs[0].values<float>();   // dims: r.outputs[0].dims
//
//   - The node reaches the plugin as an ONNX graph would (attributes as
//     ONNX stores them: FLOAT attributes are float32).
//   - make_constant(...) (or tensor.constant = true) shows an input's data to
//     the kernel at creation, like an initializer (e.g. Reshape's shape).
//   - omitted() is an absent optional input; node.output_count sets the
//     number of node outputs (an output the kernel never requests comes back
//     with present == false).
//   - A decline: on the reference provider (cpu) r.declined is true with the
//     reason in r.error; on any other provider run_node throws
//     ProviderDeclined and the test is skipped with the reason.
//     Otherwise a non-ok r.error is the kernel's (or the host's) message.
//   - RunOptions::in_place hands an input's buffer to the kernel as the output
//     wherever the kernel declares ONYX_OUTPUT_MAY_OVERWRITE_INPUT (the
//     host always does so for ONYX_OUTPUT_ALIASES_INPUT, as the runtime must).
//   - Fresh output buffers are filled with 0xCD bytes so that an element the
//     kernel forgets to write shows up as garbage.
//   - EXPECT_ERROR_MENTIONS(r, "text") checks that the node failed; on the
//     reference provider also that its message says `text` (other providers
//     word their errors their own way). EXPECT_ON_REFERENCE(...) checks the
//     reference's own choices (in-place declarations) on the reference only.
//
// The ONNX backend node tests run per op family through onnx_cases.h.
#pragma once

#include <gtest/gtest.h>
#include <onyx_provider.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace onyx::test {

// ONNX element type of a C++ type (bool maps to ONYX_DTYPE_BOOL, one byte).
template <typename T>
constexpr int32_t dtype_of() {
  if constexpr (std::is_same_v<T, float>) return ONYX_DTYPE_FLOAT32;
  else if constexpr (std::is_same_v<T, double>) return ONYX_DTYPE_FLOAT64;
  else if constexpr (std::is_same_v<T, int8_t>) return ONYX_DTYPE_INT8;
  else if constexpr (std::is_same_v<T, uint8_t>) return ONYX_DTYPE_UINT8;
  else if constexpr (std::is_same_v<T, int16_t>) return ONYX_DTYPE_INT16;
  else if constexpr (std::is_same_v<T, uint16_t>) return ONYX_DTYPE_UINT16;
  else if constexpr (std::is_same_v<T, int32_t>) return ONYX_DTYPE_INT32;
  else if constexpr (std::is_same_v<T, uint32_t>) return ONYX_DTYPE_UINT32;
  else if constexpr (std::is_same_v<T, int64_t>) return ONYX_DTYPE_INT64;
  else if constexpr (std::is_same_v<T, uint64_t>) return ONYX_DTYPE_UINT64;
  else if constexpr (std::is_same_v<T, bool>) return ONYX_DTYPE_BOOL;
  else static_assert(sizeof(T) == 0, "no ONNX dtype for this type");
}

// A tensor owned by the test: dense, row-major bytes.
struct HostTensor {
  int32_t dtype = ONYX_DTYPE_FLOAT32;
  std::vector<int64_t> dims;
  std::vector<unsigned char> bytes;
  bool present = true;    // false: an omitted optional input/output
  bool constant = false;  // input only: data visible at kernel creation

  int64_t size() const;
  template <typename T>
  std::vector<T> values() const {
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
  // Every element as double, for any numeric dtype incl. bool/float16/bfloat16.
  std::vector<double> as_doubles() const;
};

template <typename T>
HostTensor make_tensor(std::vector<int64_t> dims, const std::vector<T>& values) {
  HostTensor t;
  t.dtype = dtype_of<T>();
  t.dims = std::move(dims);
  if constexpr (std::is_same_v<T, bool>) {
    for (bool v : values) t.bytes.push_back(v ? 1 : 0);
  } else {
    t.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  }
  return t;
}
template <typename T>
HostTensor make_constant(std::vector<int64_t> dims, const std::vector<T>& values) {
  HostTensor t = make_tensor<T>(std::move(dims), values);
  t.constant = true;
  return t;
}
template <typename T>
HostTensor make_scalar(T value) {
  return make_tensor<T>({}, std::vector<T>{value});
}
// A tensor of any dtype from raw bytes (float16, bfloat16, ...).
HostTensor make_raw(int32_t dtype, std::vector<int64_t> dims, std::vector<unsigned char> bytes);
HostTensor omitted();

// float16 / bfloat16 bit conversions (round to nearest even).
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

// An attribute value as ONNX stores it: FLOAT attributes are float32, so a
// kernel (float64 ones too) sees float(v); references must use that value.
inline double as_onnx_float(double v) { return double(float(v)); }

struct AttrValue {
  int32_t type = ONYX_ATTR_UNDEFINED;  // OnyxAttributeType
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  HostTensor tensor;
};

struct NodeSpec {
  explicit NodeSpec(std::string op, int64_t opset_version = 17)
      : op_type(std::move(op)), opset(opset_version) {}

  std::string op_type;
  int64_t opset;
  std::string domain;          // "" for ai.onnx
  std::string name = "test_node";
  std::vector<HostTensor> inputs;
  size_t output_count = 1;
  // Outputs the graph leaves out (an empty name, as ONNX omits an optional
  // output); the kernel should not compute them.
  std::vector<bool> omitted_outputs;
  // Optional: element types of the outputs as the graph would declare them
  // (0 = not known); empty means all unknown.
  std::vector<int32_t> output_dtypes;
  std::vector<std::pair<std::string, AttrValue>> attributes;

  NodeSpec& attr(const std::string& key, int64_t v);
  NodeSpec& attr(const std::string& key, int v) { return attr(key, int64_t{v}); }
  NodeSpec& attr(const std::string& key, double v);
  NodeSpec& attr(const std::string& key, float v) { return attr(key, double{v}); }
  NodeSpec& attr(const std::string& key, const std::string& v);
  NodeSpec& attr(const std::string& key, const char* v) { return attr(key, std::string(v)); }
  NodeSpec& attr(const std::string& key, std::vector<int64_t> v);
  NodeSpec& attr(const std::string& key, std::vector<float> v);
  NodeSpec& attr(const std::string& key, std::vector<std::string> v);
  NodeSpec& attr(const std::string& key, HostTensor v);
  NodeSpec& attr(const std::string& key, AttrValue v);  // any type, set v.type
};

struct RunOptions {
  size_t threads = 1;             // > 1: ctx_parallel_for runs on std::threads
  bool in_place = false;          // honour ONYX_OUTPUT_MAY_OVERWRITE_INPUT
  bool hide_input_shapes = false; // value infos say "rank unknown" for non-constants
};

struct RunResult {
  bool declined = false;          // the reference provider declined the node; error = reason
  std::string error;              // empty on success
  std::vector<HostTensor> outputs;
  // What the kernel declared for each output (kind, input_index).
  std::vector<OnyxOutputMemoryInfo> output_memory;
  // True for outputs whose buffer was an input's buffer (alias or in place).
  std::vector<bool> shared_with_input;
  bool ok() const { return !declined && error.empty(); }
};

// Runs `spec` on the current provider (test_providers.h).
RunResult run_node(const NodeSpec& spec, const RunOptions& options = {});

// Whether the current provider is the reference (its messages are the ones
// the tests quote).
bool on_reference_provider();

}  // namespace onyx::test

// The node must have failed; on the reference provider its message must
// mention `text`.
#define EXPECT_ERROR_MENTIONS(result, text)                                                   \
  do {                                                                                        \
    const ::onyx::test::RunResult& onyx_r_ = (result);                                        \
    EXPECT_FALSE(onyx_r_.ok()) << "expected an error mentioning \"" << (text) << "\"";       \
    if (::onyx::test::on_reference_provider()) {                                              \
      EXPECT_NE(onyx_r_.error.find(text), std::string::npos) << onyx_r_.error;                \
    }                                                                                         \
  } while (false)

// An expectation about the reference provider's own choices (which outputs
// its kernels declare in place or as aliases): another provider chooses for
// itself, and only its results are checked.
#define EXPECT_ON_REFERENCE(expectation)            \
  do {                                              \
    if (::onyx::test::on_reference_provider()) {    \
      expectation;                                  \
    }                                               \
  } while (false)
