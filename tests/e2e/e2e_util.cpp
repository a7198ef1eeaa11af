#include "e2e_util.h"

#include <onnx/onnx_pb.h>
#include <onyx/util/tensor_proto_codec.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace onyx::e2e {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "onyx_e2e_XXXXXX").string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

Comparison compare(std::span<const float> out, std::span<const double> ref) {
  if (out.size() != ref.size())
    throw std::runtime_error("compare: " + std::to_string(out.size()) + " outputs vs " +
                             std::to_string(ref.size()) + " reference values");
  Comparison c;
  for (size_t i = 0; i < ref.size(); ++i) {
    c.scale = std::max(c.scale, std::abs(ref[i]));
    double err = std::abs(double(out[i]) - ref[i]);
    if (!(err <= c.max_abs_error)) {  // also catches NaN outputs
      c.max_abs_error = std::isnan(err) ? INFINITY : err;
      c.worst_index = i;
    }
  }
  c.normalized_error = c.max_abs_error / std::max(c.scale, 1e-3);
  return c;
}

std::vector<float> run_single(onyx::Session& session, const std::vector<int64_t>& dims, const std::vector<float>& x,
                              std::vector<int64_t>* output_dims) {
  onyx::Tensor input = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, dims, x);
  std::vector<onyx::Tensor> outputs = session.run({{"x", &input}});
  if (outputs.size() != 1) throw std::runtime_error("expected 1 output, got " + std::to_string(outputs.size()));
  onyx::Tensor& y = outputs[0];
  if (y.dtype() != ONYX_DTYPE_FLOAT32) throw std::runtime_error("output is not float32");
  *output_dims = y.shape();
  return std::vector<float>(y.data<float>(), y.data<float>() + y.size());
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_tensor_pb(const fs::path& path, const std::string& name, const std::vector<int64_t>& dims,
                     const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  // The typed field on purpose, unlike the codec's raw_data: the CLI must read both.
  for (float v : values) t.add_float_data(v);
  std::ofstream out(path, std::ios::binary);
  if (!t.SerializeToOstream(&out)) throw std::runtime_error("cannot write " + path.string());
}

void write_npy_f32(const fs::path& path, const std::vector<int64_t>& dims, const std::vector<float>& values) {
  std::string shape = "(";
  for (size_t k = 0; k < dims.size(); ++k) shape += (k ? ", " : "") + std::to_string(dims[k]);
  shape += dims.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';  // magic + version + length + header is now a multiple of 64
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += char(header.size() & 0xFF);
  bytes += char(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::vector<float> read_tensor_pb(const fs::path& path, std::vector<int64_t>* dims, std::string* name) {
  onnx::TensorProto t;
  if (!t.ParseFromString(read_file(path))) throw std::runtime_error(path.string() + " is not a TensorProto");
  util::DecodedTensor decoded;  // through the one codec the runtime and the CLI use
  util::CodecError error = util::decode_tensor_proto(t, {"", path.filename().string()}, decoded);
  if (!error.ok()) throw std::runtime_error(error.message);
  if (decoded.dtype != onnx::TensorProto::FLOAT) throw std::runtime_error(path.string() + " is not float32");
  *dims = decoded.dims;
  *name = t.name();
  const float* values = static_cast<const float*>(decoded.data);
  return std::vector<float>(values, values + decoded.bytes / sizeof(float));
}

std::string quote(const fs::path& path) {
  std::string out = "'";
  for (char c : path.string()) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

CliResult run_cli(const std::string& args) {
  std::string command = quote(ONYX_CLI_PATH) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed for: " + command);
  CliResult result;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) result.output.append(buf, n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return result;
}

std::vector<double> json_numbers(const std::string& json, const std::string& key) {
  std::vector<double> out;
  const std::string needle = "\"" + key + "\":";
  for (size_t pos = json.find(needle); pos != std::string::npos; pos = json.find(needle, pos + 1)) {
    const char* start = json.c_str() + pos + needle.size();
    char* end = nullptr;
    double v = std::strtod(start, &end);
    if (end != start) out.push_back(v);
  }
  return out;
}

}  // namespace onyx::e2e
