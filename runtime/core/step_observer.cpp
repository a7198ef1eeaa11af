// step_observer.cpp: the process-wide observer (core/step_observer.h).
#include "core/step_observer.h"

#include <atomic>

namespace onyx::runtime {
namespace {

std::atomic<StepObserver> g_step_observer{nullptr};

}  // namespace

void set_step_observer(StepObserver observer) { g_step_observer.store(observer, std::memory_order_release); }
StepObserver step_observer() { return g_step_observer.load(std::memory_order_acquire); }

ProviderActivity::ProviderActivity(const std::string& provider, const std::string& what)
    : observer_(step_observer()) {
  if (observer_) observer_(provider.c_str(), ("while " + what).c_str());
}

ProviderActivity::~ProviderActivity() {
  if (observer_) observer_("", "");
}

}  // namespace onyx::runtime
