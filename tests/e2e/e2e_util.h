// e2e_util.h: helpers shared by the end-to-end tests.
#pragma once

#include <onyx/onyx.hpp>

#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace onyx::e2e {

// A fresh folder under the system temp dir, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// The accuracy metric of these tests, normalized max error:
//   max_i |out_i - ref_i| / max(max_j |ref_j|, 1e-3)
// Float32 rounding error in a dot product scales with the magnitude of the
// terms summed, not with the (possibly cancelled, near-zero) result, so an
// element-wise relative error is meaningless for logits near zero. The
// largest reference magnitude stands in for the terms' scale; the 1e-3 floor
// keeps an all-near-zero output from dividing by ~0.
struct Comparison {
  double max_abs_error = 0;
  double scale = 0;             // max |ref|
  double normalized_error = 0;  // the metric above
  size_t worst_index = 0;
};
Comparison compare(std::span<const float> out, std::span<const double> ref);

// Runs `session` on one float32 input named "x" and returns its single output
// (float32, shape in *output_dims).
std::vector<float> run_single(onyx::Session& session, const std::vector<int64_t>& dims, const std::vector<float>& x,
                              std::vector<int64_t>* output_dims);

std::string read_file(const std::filesystem::path& path);

// Writes a float32 tensor as an ONNX TensorProto file (.pb) or as .npy (v1 header).
void write_tensor_pb(const std::filesystem::path& path, const std::string& name, const std::vector<int64_t>& dims,
                     const std::vector<float>& values);
void write_npy_f32(const std::filesystem::path& path, const std::vector<int64_t>& dims, const std::vector<float>& values);
// Reads a float32 TensorProto file; fails the test (via exception) on anything else.
std::vector<float> read_tensor_pb(const std::filesystem::path& path, std::vector<int64_t>* dims, std::string* name);

// Runs the built `onyx` binary with `args` (shell words, already quoted) and
// returns its exit status and combined stdout + stderr.
struct CliResult {
  int exit_code = -1;
  std::string output;
};
CliResult run_cli(const std::string& args);
std::string quote(const std::filesystem::path& path);

// All numbers that follow "key": in a JSON text (the C API's reports are flat
// enough that this is all the tests need).
std::vector<double> json_numbers(const std::string& json, const std::string& key);

}  // namespace onyx::e2e
