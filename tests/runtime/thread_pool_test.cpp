#include <gtest/gtest.h>

#include <atomic>

#include "core/thread_pool.h"

namespace onyx::runtime {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  ThreadPool pool(4);
  for (size_t n : {1u, 7u, 100u, 100000u}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, 3, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hits[i]++;
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  }
}

TEST(ThreadPool, ConcurrentCallersAndNestedLoops) {
  ThreadPool pool(3);
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep)
        pool.parallel_for(64, 1, [&](size_t b, size_t e) {
          // A nested loop runs inline instead of deadlocking.
          pool.parallel_for(e - b, 1, [&](size_t b2, size_t e2) { total += long(e2 - b2); });
        });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4L * 50 * 64);
}

}  // namespace
}  // namespace onyx::runtime
