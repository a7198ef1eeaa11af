#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <iterator>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace onyx::runtime {
namespace {

thread_local bool t_inside_loop = false;

// How long an idle worker keeps polling for the next loop before sleeping:
// longer than the host work between two kernels' loops or two steps of a
// training loop (tens to hundreds of microseconds), because waking a sleeping
// thread costs more (about 100 us on a 2-core VM: 100 us of spinning made
// the CNN's training step on 2 threads 2.3 ms, its optimizer step running
// mostly on one thread; 1 ms, 2.14).
constexpr auto kSpin = std::chrono::microseconds(1000);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

bool published(uint64_t generation, uint64_t seen) { return generation % 2 == 0 && generation != seen; }

}  // namespace

ThreadPool::ThreadPool(size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  if (threads <= std::size(inline_claimed_)) {
    claimed_ = inline_claimed_;
  } else {
    claimed_heap_ = std::make_unique<std::atomic<bool>[]>(threads);
    claimed_ = claimed_heap_.get();
  }
  for (size_t k = 1; k < threads; ++k) workers_.emplace_back([this, k] { worker_main(k); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(sleep_mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks(uint64_t generation, size_t self) {
  // Sequentially consistent, with the caller's generation store and pending_
  // load: either the caller sees this thread inside, or this thread sees the
  // job changing and leaves without reading it. Inside, it tries every chunk
  // once, its own first (one pending_ round trip per job, not per chunk:
  // each is a cache line crossing cores).
  pending_.fetch_add(1);
  if (generation_.load() == generation) {
    for (size_t tried = 0; tried < chunks_; ++tried) {
      const size_t k = (self + tried) % chunks_;
      if (claimed_[k].load(std::memory_order_relaxed) || claimed_[k].exchange(true)) continue;
      const size_t begin = k * chunk_;
      t_inside_loop = true;
      (*body_)(begin, std::min(n_, begin + chunk_));
      t_inside_loop = false;
    }
  }
  pending_.fetch_sub(1);
}

void ThreadPool::worker_main(size_t self) {
  uint64_t seen = 0;
  for (;;) {
    // Spin for the next loop, then sleep until one is published.
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    const uint64_t quiet = quiet_.load(std::memory_order_relaxed);
    uint64_t now = generation_.load();
    for (int k = 0; !published(now, seen) && !stop_.load(std::memory_order_relaxed); ++k) {
      cpu_relax();
      if ((k & 63) == 63 && (quiet_.load(std::memory_order_relaxed) != quiet ||
                             std::chrono::steady_clock::now() > spin_until))
        break;
      now = generation_.load();
    }
    if (!published(now, seen)) {
      std::unique_lock lock(sleep_mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return stop_.load() || published(generation_.load(), seen); });
      sleepers_.fetch_sub(1);
      now = generation_.load();
    }
    if (stop_.load()) return;
    if (!published(now, seen)) continue;
    seen = now;
    run_chunks(now, self);
  }
}

void ThreadPool::parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& body) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  std::unique_lock job(job_mutex_, std::defer_lock);
  if (workers_.empty() || n <= grain || t_inside_loop || !job.try_lock()) {
    body(0, n);
    return;
  }
  const size_t chunks = std::min(thread_count(), (n + grain - 1) / grain);
  const uint64_t previous = generation_.load();  // only the job_mutex_ holder changes it
  generation_.store(previous + 1);               // odd: the job is being rewritten
  while (pending_.load() != 0) cpu_relax();     // stragglers of the last job leave
  body_ = &body;
  n_ = n;
  chunk_ = (n + chunks - 1) / chunks;
  chunks_ = (n + chunk_ - 1) / chunk_;  // rounding up may leave fewer
  for (size_t k = 0; k < chunks_; ++k) claimed_[k].store(false, std::memory_order_relaxed);
  const uint64_t generation = previous + 2;
  generation_.store(generation);
  if (sleepers_.load() > 0) {
    std::lock_guard lock(sleep_mutex_);  // a worker between its check and its wait sees the new job
    wake_.notify_all();
  }
  run_chunks(generation, 0);
  // Every chunk is claimed once run_chunks returns; wait for those others run.
  for (int k = 0; pending_.load() != 0; ++k)
    if (k < 4096) cpu_relax();
    else std::this_thread::yield();
}

}  // namespace onyx::runtime
