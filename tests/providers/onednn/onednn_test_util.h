// onednn_test_util.h: helpers for the oneDNN provider's tests. Every test
// loads the real plugin from disk (libonyx_provider_onednn.so beside the test
// binary's lib/onyx/providers) through the public C++ API, with the CPU
// provider listed second so that nodes oneDNN declines fall back.
#pragma once

#include <onnx/onnx_pb.h>
#include <onyx/onyx.hpp>

#include <string>
#include <vector>

namespace onyx::onednn_test {

// Provider options for a session: "onednn" first (with `options`), then "cpu";
// fallback allowed (the partition report still records every decline).
onyx::SessionOptions onednn_then_cpu(const std::vector<std::pair<std::string, std::string>>& options = {});
onyx::SessionOptions cpu_only();

// A session from an in-memory model.
onyx::Session make_session(onyx::Env& env, const onnx::ModelProto& model, const onyx::SessionOptions& options);

// Where the partition report placed node `name`: the device label, or "".
std::string node_device(const std::string& report, const std::string& name);
// The fused_group number the report gives node `name` (0: not fused).
int node_fused_group(const std::string& report, const std::string& name);

// Both providers compute in float32 with different summation orders (and
// oneDNN's own exp/erf/tanh, accurate to a few ulp): results agree to ~1e-6
// of the output's scale. 1e-4 leaves room for that and catches any wrong
// attribute (transpose, bias, scale, padding), which moves results by >= 1e-2.
inline constexpr double kTolerance = 1e-4;

struct Feed {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> values;
};

// Runs `model` on onednn-then-cpu and on cpu only (with `threads` intra-op
// threads; 0: one per core); expects (gtest) the same outputs within
// kTolerance of the output's scale. Returns the onednn session's partition
// report.
std::string expect_same_as_cpu(const onnx::ModelProto& model, const std::vector<Feed>& feeds, const char* label,
                               size_t threads = 0);

// A tensor's elements widened to double (float32/64, int8/32/64, uint8, bool).
std::vector<double> tensor_values(onyx::Tensor& tensor);

// Deterministic values in [lo, hi).
std::vector<float> random_floats(size_t count, uint64_t seed, double lo = -1.0, double hi = 1.0);

}  // namespace onyx::onednn_test
