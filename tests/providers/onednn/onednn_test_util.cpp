#include "onednn_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "test_models.h"

namespace onyx::onednn_test {

onyx::SessionOptions onednn_then_cpu(const std::vector<std::pair<std::string, std::string>>& options) {
  onyx::SessionOptions o;
  o.provider("onednn", options).provider("cpu").fallback(ONYX_FALLBACK_ALLOW);
  return o;
}

onyx::SessionOptions cpu_only() {
  onyx::SessionOptions o;
  o.provider("cpu");
  return o;
}

onyx::Session make_session(onyx::Env& env, const onnx::ModelProto& model, const onyx::SessionOptions& options) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw std::runtime_error("cannot serialize the model");
  return onyx::Session(env, std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()), options);
}

namespace {

// The text of the JSON object of node `name` in a partition report.
std::string node_object(const std::string& report, const std::string& name) {
  size_t at = report.find("{\"node\":\"" + name + "\"");
  if (at == std::string::npos) return {};
  size_t end = report.find("\"declined_by\"", at);
  return report.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string field(const std::string& object, const std::string& key) {
  size_t at = object.find("\"" + key + "\":");
  if (at == std::string::npos) return {};
  at += key.size() + 3;
  if (object[at] == '"') return object.substr(at + 1, object.find('"', at + 1) - at - 1);
  size_t end = object.find_first_of(",}", at);
  return object.substr(at, end - at);
}

template <typename T>
std::vector<double> widen(const void* data, size_t count) {
  std::vector<double> out(count);
  const T* p = static_cast<const T*>(data);
  for (size_t i = 0; i < count; ++i) out[i] = double(p[i]);
  return out;
}

std::vector<double> widen_any(int32_t dtype, const void* data, size_t count) {
  switch (dtype) {
    case ONYX_DTYPE_FLOAT32: return widen<float>(data, count);
    case ONYX_DTYPE_FLOAT64: return widen<double>(data, count);
    case ONYX_DTYPE_INT32: return widen<int32_t>(data, count);
    case ONYX_DTYPE_INT64: return widen<int64_t>(data, count);
    case ONYX_DTYPE_INT8: return widen<int8_t>(data, count);
    case ONYX_DTYPE_UINT8: case ONYX_DTYPE_BOOL: return widen<uint8_t>(data, count);
    default: throw std::runtime_error("unsupported dtype " + std::to_string(dtype) + " in a test tensor");
  }
}

}  // namespace

std::string node_device(const std::string& report, const std::string& name) {
  return field(node_object(report, name), "device");
}

int node_fused_group(const std::string& report, const std::string& name) {
  std::string v = field(node_object(report, name), "fused_group");
  return v.empty() ? 0 : std::stoi(v);
}

std::vector<double> tensor_values(onyx::Tensor& tensor) {
  return widen_any(tensor.dtype(), tensor.data<void>(), size_t(tensor.size()));
}

std::vector<float> random_floats(size_t count, uint64_t seed, double lo, double hi) {
  return onyx::test_models::Rng(seed).uniform_vector(count, lo, hi);
}

std::string expect_same_as_cpu(const onnx::ModelProto& model, const std::vector<Feed>& feeds, const char* label,
                               size_t threads) {
  onyx::Env env;
  onyx::SessionOptions onednn_options = onednn_then_cpu(), cpu_options = cpu_only();
  if (threads) {
    onednn_options.threads(threads);
    cpu_options.threads(threads);
  }
  onyx::Session onednn = make_session(env, model, onednn_options);
  onyx::Session cpu = make_session(env, model, cpu_options);
  std::vector<onyx::Tensor> tensors;
  for (const Feed& f : feeds) tensors.push_back(onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, f.dims, f.values));
  std::vector<std::pair<std::string, const onyx::Tensor*>> inputs;
  for (size_t k = 0; k < feeds.size(); ++k) inputs.push_back({feeds[k].name, &tensors[k]});
  std::vector<onyx::Tensor> got = onednn.run(inputs), want = cpu.run(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
    EXPECT_EQ(got[k].shape(), want[k].shape()) << label;
    std::vector<double> a = tensor_values(got[k]), b = tensor_values(want[k]);
    double scale = 0, err = 0;
    for (size_t i = 0; i < b.size() && i < a.size(); ++i) {
      scale = std::max(scale, std::fabs(b[i]));
      double e = std::fabs(a[i] - b[i]);
      err = std::isnan(e) ? INFINITY : std::max(err, e);
    }
    double normalized = err / std::max(scale, 1e-3);
    std::printf("[ accuracy ] %s output %zu: normalized error vs cpu %.3g (tolerance %.0e)\n", label, k, normalized,
                kTolerance);
    EXPECT_GT(scale, 0.1) << label << ": degenerate output";
    EXPECT_LE(normalized, kTolerance) << label;
  }
  return onednn.partition_report();
}

}  // namespace onyx::onednn_test
