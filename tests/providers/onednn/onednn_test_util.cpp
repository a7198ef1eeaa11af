#include "onednn_test_util.h"

#include <cmath>
#include <cstring>
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

size_t dtype_bytes(int32_t dtype) {
  if (size_t size = onyx_dtype_size(dtype)) return size;
  throw std::runtime_error("unsupported dtype " + std::to_string(dtype) + " in a test tensor");
}

// The tensor's bytes, from raw_data or the typed field.
std::string proto_bytes(const onnx::TensorProto& p) {
  if (p.has_raw_data()) return p.raw_data();
  std::string out;
  auto append = [&](const auto& field, auto as) {
    for (auto v : field) {
      decltype(as) x = decltype(as)(v);
      out.append(reinterpret_cast<const char*>(&x), sizeof x);
    }
  };
  switch (p.data_type()) {
    case ONYX_DTYPE_FLOAT32: append(p.float_data(), float{}); break;
    case ONYX_DTYPE_FLOAT64: append(p.double_data(), double{}); break;
    case ONYX_DTYPE_INT64: append(p.int64_data(), int64_t{}); break;
    case ONYX_DTYPE_INT32: append(p.int32_data(), int32_t{}); break;
    case ONYX_DTYPE_INT8: append(p.int32_data(), int8_t{}); break;
    case ONYX_DTYPE_UINT8: case ONYX_DTYPE_BOOL: append(p.int32_data(), uint8_t{}); break;
    default: throw std::runtime_error("unsupported TensorProto type " + std::to_string(p.data_type()));
  }
  return out;
}

}  // namespace

std::string node_device(const std::string& report, const std::string& name) {
  return field(node_object(report, name), "device");
}

int node_fused_group(const std::string& report, const std::string& name) {
  std::string v = field(node_object(report, name), "fused_group");
  return v.empty() ? 0 : std::stoi(v);
}

onyx::Tensor tensor_from_proto(const onnx::TensorProto& proto) {
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  onyx::Tensor t = onyx::Tensor::zeros(OnyxDataType(proto.data_type()), dims);
  std::string bytes = proto_bytes(proto);
  if (bytes.size() != t.byte_size())
    throw std::runtime_error("tensor '" + proto.name() + "' has " + std::to_string(bytes.size()) + " bytes, expected " +
                             std::to_string(t.byte_size()));
  if (!bytes.empty()) std::memcpy(t.data<void>(), bytes.data(), bytes.size());
  return t;
}

std::vector<double> proto_values(const onnx::TensorProto& proto) {
  std::string bytes = proto_bytes(proto);
  return widen_any(proto.data_type(), bytes.data(), bytes.size() / dtype_bytes(proto.data_type()));
}

std::vector<double> tensor_values(onyx::Tensor& tensor) {
  return widen_any(tensor.dtype(), tensor.data<void>(), size_t(tensor.size()));
}

std::string compare_values(const std::vector<double>& actual, const std::vector<double>& expected, double rtol,
                           double atol) {
  if (actual.size() != expected.size())
    return std::to_string(actual.size()) + " values, expected " + std::to_string(expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = actual[i], e = expected[i];
    if (std::isnan(e) && std::isnan(a)) continue;
    if (std::isinf(e) && a == e) continue;
    if (std::fabs(a - e) <= atol + rtol * std::fabs(e)) continue;
    return "element " + std::to_string(i) + ": " + std::to_string(a) + ", expected " + std::to_string(e);
  }
  return {};
}

std::vector<float> random_floats(size_t count, uint64_t seed, double lo, double hi) {
  return onyx::test_models::Rng(seed).uniform_vector(count, lo, hi);
}

}  // namespace onyx::onednn_test
