// checkpoint_test_util.h: sample checkpoints with every kind of field, and
// an exact field-by-field comparison written independently of the library's
// own diff(), so the tests do not trust the code they test.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "onyx/checkpoint.h"

namespace onyx::checkpoint::testing {

// A tensor filled with deterministic pseudo-random bytes (every bit pattern,
// NaN payloads included, must survive a round trip).
TensorRecord random_tensor(const std::string& name, int32_t dtype, Shape shape, uint64_t seed);

// Trainable float32/float16/bfloat16/int64 parameters, frozen ones of other
// dtypes (int4 and a zero-sized one included), two optimizer groups with
// per-parameter state, and properties of all three kinds.
Checkpoint sample_checkpoint(uint64_t seed = 1);

// Exact comparison of every field (tensor data bit for bit).
void expect_same(const Checkpoint& expected, const Checkpoint& actual);

// A fresh, empty folder for one test, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace onyx::checkpoint::testing
