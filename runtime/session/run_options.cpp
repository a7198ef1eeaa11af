#include "session/run_options.h"

namespace onyx::runtime {
namespace {
thread_local const RunOptions* thread_options = nullptr;
}  // namespace

void RunOptions::cancel() {
  cancels_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(hooks_mutex_);
  for (auto& entry : hooks_) entry.second();
}

RunOptions::CancelHook::CancelHook(const RunOptions* options, std::function<void()> hook) : options_(options) {
  if (!options_) return;
  std::lock_guard lock(options_->hooks_mutex_);
  id_ = options_->next_hook_++;
  options_->hooks_.emplace(id_, std::move(hook));
}

RunOptions::CancelHook::~CancelHook() {
  if (!options_) return;
  std::lock_guard lock(options_->hooks_mutex_);
  options_->hooks_.erase(id_);
}

RunOptionsScope::RunOptionsScope(const RunOptions* options)
    : previous_(thread_options), tag_(options ? &options->tag() : nullptr) {
  if (options) thread_options = options;
}

RunOptionsScope::~RunOptionsScope() { thread_options = previous_; }

const RunOptions* RunOptionsScope::current() { return thread_options; }

}  // namespace onyx::runtime
