#include "core/thread_pool.h"

#include <algorithm>

namespace onyx::runtime {
namespace {
thread_local bool t_inside_loop = false;
}

ThreadPool::ThreadPool(size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (size_t k = 1; k < threads; ++k) workers_.emplace_back([this, k] { worker_main(k); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

bool ThreadPool::run_chunks() {
  bool ran = false;
  for (;;) {
    size_t begin, end;
    const std::function<void(size_t, size_t)>* body;
    {
      std::lock_guard lock(mutex_);
      if (!body_ || next_ >= n_) return ran;
      begin = next_;
      end = std::min(n_, begin + chunk_);
      next_ = end;
      ++pending_;
      body = body_;
    }
    t_inside_loop = true;
    (*body)(begin, end);
    t_inside_loop = false;
    ran = true;
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0 && next_ >= n_) done_.notify_all();
    }
  }
}

void ThreadPool::worker_main(size_t) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_chunks();
  }
}

void ThreadPool::parallel_for(size_t n, size_t grain,
                              const std::function<void(size_t, size_t)>& body) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  if (workers_.empty() || n <= grain || t_inside_loop) {
    body(0, n);
    return;
  }
  std::lock_guard job(job_mutex_);
  size_t chunks = std::min(thread_count(), (n + grain - 1) / grain);
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    n_ = n;
    chunk_ = (n + chunks - 1) / chunks;
    next_ = 0;
    pending_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  run_chunks();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0 && next_ >= n_; });
  body_ = nullptr;
}

}  // namespace onyx::runtime
