// thread_pool.h: the core's intra-op thread pool. Persistent workers; the
// calling thread takes part in every loop, so a pool of N threads has N-1
// workers. Providers reach it through OnyxHostApi.ctx_parallel_for.
//
// Kernels of one run follow each other within microseconds, so a worker that
// finished a loop spins for the next (up to 1 ms) before it sleeps: waking a
// sleeping thread costs tens to hundreds of microseconds, more than a small
// kernel takes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
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

  // Runs body(begin, end) over chunks of [0, n) (each >= grain items, at
  // most one per thread), returning when all are done. Thread k (the caller
  // is 0) runs chunk k when it arrives in time, so loops of the same size
  // touch the same range from the same core each run: a step's data stays in
  // that core's cache from one kernel (and one step) to the next. A thread
  // that is late loses its chunk to whichever finishes first. A loop started while
  // another caller's loop holds the workers runs inline on its own thread
  // (concurrent runs never wait for each other); a loop started from inside
  // a body runs inline too. Thread-safe.
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& body);

  // Tells idle workers that no loop is coming soon: they stop spinning and
  // sleep now. A session calls it before a step on another provider, whose
  // own threads (oneDNN's OpenMP team) would otherwise wait for the cores
  // these spin on (MobileNetV2 int8 on 2 cores: its first oneDNN convolution
  // took 160 us after two CPU-provider steps, 67 us without the spinning).
  // Thread-safe; cheap (one atomic increment).
  void quiet() { quiet_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void worker_main(size_t self);
  // Claims and runs chunks of job `generation`, its own (`self`) first,
  // until none is left, or returns at once when that job is no longer the
  // current one.
  void run_chunks(uint64_t generation, size_t self);

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;  // held by the caller whose loop the workers serve
  // Per chunk, thread_count() of them: inline_claimed_ for up to 16 threads.
  std::atomic<bool>* claimed_ = nullptr;
  std::unique_ptr<std::atomic<bool>[]> claimed_heap_;
  // The current job, published like a seqlock: the caller makes generation_
  // odd, waits until no thread is inside run_chunks, writes the fields, then
  // makes generation_ even again. A thread enters run_chunks (pending_ + 1)
  // before it checks the generation, so it never reads fields being written.
  // All in one cache line: a worker that sees the new generation has the
  // job, its count and its chunk flags too, instead of fetching each line
  // from the caller's core in turn (a loop of two 0.23 us chunks on 2 cores:
  // 0.58 -> 0.44 us).
  alignas(64) const std::function<void(size_t, size_t)>* body_ = nullptr;
  size_t n_ = 0, chunk_ = 0, chunks_ = 0;
  std::atomic<size_t> pending_{0};  // threads inside run_chunks
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> inline_claimed_[16];
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> quiet_{0};  // quiet() calls: a change ends a worker's spin
  // Sleeping workers wait here; the caller notifies only when one sleeps.
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
};

}  // namespace onyx::runtime
