#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "core/host_buffer_pool.h"

namespace onyx::runtime {
namespace {

TEST(HostBufferPool, ADroppedOutputsBufferServesTheNextOutputOfItsSize) {
  auto pool = std::make_shared<HostBufferPool>();
  Tensor first = pool->allocate_uninitialized(ONYX_DTYPE_FLOAT32, {16, 64, 512});
  const void* memory = first.data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(memory) % 64, 0u);
  Tensor held = pool->allocate_uninitialized(ONYX_DTYPE_FLOAT32, {16, 64, 512});
  EXPECT_NE(held.data(), memory);  // in use: not handed out twice
  first = Tensor();
  EXPECT_EQ(pool->idle_bytes(), size_t(16 * 64 * 512 * 4));
  Tensor other_size = pool->allocate_uninitialized(ONYX_DTYPE_FLOAT32, {3});
  EXPECT_NE(other_size.data(), memory);
  Tensor again = pool->allocate_uninitialized(ONYX_DTYPE_INT32, {16, 64, 512});  // same bytes, any type
  EXPECT_EQ(again.data(), memory);
  EXPECT_EQ(again.dtype(), ONYX_DTYPE_INT32);
  EXPECT_EQ(pool->idle_bytes(), 0u);
}

TEST(HostBufferPool, KeepsABoundedAmountIdle) {
  auto pool = std::make_shared<HostBufferPool>();
  const int64_t quarter = int64_t(HostBufferPool::kMaxIdleBytes / 4);
  std::vector<Tensor> tensors;
  for (int k = 0; k < 6; ++k) tensors.push_back(pool->allocate_uninitialized(ONYX_DTYPE_UINT8, {quarter}));
  tensors.clear();
  EXPECT_EQ(pool->idle_bytes(), HostBufferPool::kMaxIdleBytes);  // two of six freed
}

TEST(HostBufferPool, TensorsOutliveThePoolAndThreadsShareIt) {
  auto pool = std::make_shared<HostBufferPool>();
  std::vector<std::thread> threads;
  std::vector<Tensor> kept(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 1000; ++k) {
        Tensor x = pool->allocate_uninitialized(ONYX_DTYPE_FLOAT32, {int64_t(1 + k % 7), 100});
        static_cast<float*>(x.data())[0] = float(t);
        if (k == 999) kept[size_t(t)] = x;
      }
    });
  for (auto& th : threads) th.join();
  pool.reset();  // the kept tensors free their buffers when they go
  for (int t = 0; t < 4; ++t) EXPECT_EQ(static_cast<float*>(kept[size_t(t)].data())[0], float(t));
}

}  // namespace
}  // namespace onyx::runtime
