#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

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

// Concurrent runs share a session's pool: a loop started while another
// caller's loop holds the workers runs on its own thread instead of waiting.
// The first loop's body waits for the second loop to finish; if the second
// queued behind the first, the wait would time out.
TEST(ThreadPool, ASecondCallerDoesNotWaitForTheFirstCallersLoop) {
  ThreadPool pool(2);
  std::mutex m;
  std::condition_variable cv;
  bool second_done = false, first_started = false;
  std::atomic<bool> saw_second{false};
  std::thread first([&] {
    pool.parallel_for(2, 1, [&](size_t b, size_t) {
      if (b != 0) return;
      std::unique_lock lock(m);
      first_started = true;
      cv.notify_all();
      saw_second = cv.wait_for(lock, std::chrono::seconds(20), [&] { return second_done; });
    });
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return first_started; });
  }
  long sum = 0;
  pool.parallel_for(100, 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) sum += long(i);  // inline: one thread, no race
  });
  {
    std::lock_guard lock(m);
    second_done = true;
  }
  cv.notify_all();
  first.join();
  EXPECT_TRUE(saw_second.load());
  EXPECT_EQ(sum, 4950);
}

// Back-to-back small loops (the pattern of a small model's kernels) with the
// workers alternately spinning and asleep: every index exactly once.
TEST(ThreadPool, ManySmallLoopsWithSleepsBetween) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 2000; ++rep) {
    std::vector<std::atomic<int>> hits(9);
    pool.parallel_for(9, 1, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hits[i]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << rep;
    if (rep % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin: asleep
  }
}

}  // namespace
}  // namespace onyx::runtime
