// thread_pool.h: the core's intra-op thread pool. Persistent workers; the
// calling thread takes part in every loop, so a pool of N threads has N-1
// workers. Providers reach it through OnyxHostApi.ctx_parallel_for.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace onyx::runtime {

class ThreadPool {
 public:
  explicit ThreadPool(size_t threads);  // threads >= 1 (0 means hardware concurrency)
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t thread_count() const { return workers_.size() + 1; }

  // Runs body(begin, end) over chunks of [0, n) (each >= grain items, about
  // one per thread), returning when all are done. Loops from different
  // threads are serialized; a loop started from inside a body runs inline.
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& body);

 private:
  void worker_main(size_t index);
  bool run_chunks();  // claims and runs chunks of the current job; true if any ran

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;  // one loop at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t, size_t)>* body_ = nullptr;
  size_t n_ = 0, chunk_ = 0, next_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace onyx::runtime
