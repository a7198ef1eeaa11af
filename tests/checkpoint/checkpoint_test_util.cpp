#include "checkpoint_test_util.h"

#include <unistd.h>

#include <atomic>

namespace onyx::checkpoint::testing {

TensorRecord random_tensor(const std::string& name, int32_t dtype, Shape shape, uint64_t seed) {
  TensorRecord t;
  t.name = name;
  t.dtype = dtype;
  t.shape = shape;
  t.data = Tensor::allocate(dtype, shape);
  auto* bytes = static_cast<unsigned char*>(t.data.data());
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t k = 0; k < t.data.bytes(); ++k) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    bytes[k] = static_cast<unsigned char>(state >> 56);
  }
  return t;
}

Checkpoint sample_checkpoint(uint64_t seed) {
  Checkpoint c;
  c.metadata.model_identity = "sample-model sha256:0123abcd";
  c.module.trainable.push_back(random_tensor("fc1.weight", ONYX_DTYPE_FLOAT32, {16, 12}, seed + 1));
  c.module.trainable.push_back(random_tensor("fc1.bias", ONYX_DTYPE_FLOAT32, {16}, seed + 2));
  c.module.trainable.push_back(random_tensor("half.weight", ONYX_DTYPE_FLOAT16, {3, 5, 7}, seed + 3));
  c.module.trainable.push_back(random_tensor("bf.weight", ONYX_DTYPE_BFLOAT16, {33}, seed + 4));
  c.module.trainable.push_back(random_tensor("scalar", ONYX_DTYPE_FLOAT32, {}, seed + 5));
  c.module.frozen.push_back(random_tensor("embedding.ids", ONYX_DTYPE_INT64, {4, 9}, seed + 6));
  c.module.frozen.push_back(random_tensor("bn.mean", ONYX_DTYPE_FLOAT64, {8}, seed + 7));
  c.module.frozen.push_back(random_tensor("mask", ONYX_DTYPE_BOOL, {5}, seed + 8));
  c.module.frozen.push_back(random_tensor("packed", ONYX_DTYPE_INT4, {7}, seed + 9));
  c.module.frozen.push_back(random_tensor("empty", ONYX_DTYPE_FLOAT32, {0, 3}, seed + 10));

  OptimizerGroup adam;
  adam.name = "default";
  adam.step = 1234;
  adam.initial_learning_rate = 1e-3;
  for (const TensorRecord& p : c.module.trainable) {
    if (p.dtype != ONYX_DTYPE_FLOAT32) continue;
    ParameterState s;
    s.parameter = p.name;
    s.tensors.push_back(random_tensor("momentum1", ONYX_DTYPE_FLOAT32, p.shape, seed + 20 + s.parameter.size()));
    s.tensors.push_back(random_tensor("momentum2", ONYX_DTYPE_FLOAT32, p.shape, seed + 40 + s.parameter.size()));
    adam.parameters.push_back(std::move(s));
  }
  OptimizerGroup sgd;
  sgd.name = "no_decay";
  sgd.step = -1;  // any int64 must survive
  sgd.initial_learning_rate = 0.1;
  ParameterState momentum;
  momentum.parameter = "bf.weight";
  momentum.tensors.push_back(random_tensor("momentum", ONYX_DTYPE_BFLOAT16, {33}, seed + 60));
  sgd.parameters.push_back(std::move(momentum));
  c.optimizer = {std::move(adam), std::move(sgd)};

  c.properties["epoch"] = int64_t(7);
  c.properties["min_int"] = std::numeric_limits<int64_t>::min();
  c.properties["best_loss"] = 0.123456789012345678;
  c.properties["tiny"] = 4.9406564584124654e-324;  // a denormal
  c.properties["note"] = std::string("utf-8 \xc3\xa9 and a \0 byte", 22);
  c.properties["empty"] = std::string();
  return c;
}

namespace {

void expect_same_tensor(const TensorRecord& e, const TensorRecord& a, const std::string& where) {
  SCOPED_TRACE(where + " '" + e.name + "'");
  EXPECT_EQ(e.name, a.name);
  EXPECT_EQ(e.dtype, a.dtype);
  EXPECT_EQ(e.shape, a.shape);
  EXPECT_EQ(e.slice.has_value(), a.slice.has_value());
  if (e.slice && a.slice) {
    EXPECT_EQ(*e.slice, *a.slice);
  }
  ASSERT_EQ(e.has_data(), a.has_data());
  if (!e.has_data()) return;
  ASSERT_EQ(e.data.bytes(), a.data.bytes());
  EXPECT_EQ(0, std::memcmp(e.data.data(), a.data.data(), e.data.bytes())) << "data differs";
}

void expect_same_list(const std::vector<TensorRecord>& e, const std::vector<TensorRecord>& a,
                      const std::string& where) {
  ASSERT_EQ(e.size(), a.size()) << where;
  for (size_t k = 0; k < e.size(); ++k) expect_same_tensor(e[k], a[k], where);
}

}  // namespace

void expect_same(const Checkpoint& e, const Checkpoint& a) {
  EXPECT_EQ(e.metadata.model_identity, a.metadata.model_identity);
  EXPECT_EQ(e.metadata.shard_index, a.metadata.shard_index);
  EXPECT_EQ(e.metadata.shard_count, a.metadata.shard_count);
  expect_same_list(e.module.trainable, a.module.trainable, "trainable");
  expect_same_list(e.module.frozen, a.module.frozen, "frozen");
  ASSERT_EQ(e.optimizer.size(), a.optimizer.size());
  for (size_t g = 0; g < e.optimizer.size(); ++g) {
    const OptimizerGroup &eg = e.optimizer[g], &ag = a.optimizer[g];
    EXPECT_EQ(eg.name, ag.name);
    EXPECT_EQ(eg.step, ag.step);
    EXPECT_EQ(std::memcmp(&eg.initial_learning_rate, &ag.initial_learning_rate, sizeof(double)), 0)
        << eg.initial_learning_rate << " vs " << ag.initial_learning_rate;
    ASSERT_EQ(eg.parameters.size(), ag.parameters.size());
    for (size_t p = 0; p < eg.parameters.size(); ++p) {
      EXPECT_EQ(eg.parameters[p].parameter, ag.parameters[p].parameter);
      expect_same_list(eg.parameters[p].tensors, ag.parameters[p].tensors, "state of " + eg.parameters[p].parameter);
    }
  }
  ASSERT_EQ(e.properties.size(), a.properties.size());
  for (const auto& [name, value] : e.properties) {
    auto it = a.properties.find(name);
    ASSERT_NE(it, a.properties.end()) << name;
    ASSERT_EQ(value.index(), it->second.index()) << name;
    if (auto* d = std::get_if<double>(&value)) {
      EXPECT_EQ(std::memcmp(d, &std::get<double>(it->second), sizeof(double)), 0) << name;
    } else {
      EXPECT_EQ(value, it->second) << name;
    }
  }
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("onyx_ckpt_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace onyx::checkpoint::testing
