// step_observer.h: a process-wide hook called before every step a session
// executes, and around what the host asks of a provider outside runs. The
// out-of-process worker (runtime/isolate) installs one that publishes it into
// shared memory, so that when a plugin crashes or hangs the parent can say
// which provider it was and what it was doing. The core only passes names
// along.
#pragma once

#include <string>

namespace onyx::runtime {

// `provider` is the device's provider label ("host" for steps the host runs);
// both strings live until the step ends. Must not throw; must be cheap.
using StepObserver = void (*)(const char* provider, const char* step);

// Installs (or with nullptr removes) the observer. Thread-safe; meant to be
// set once at process start, before sessions run.
void set_step_observer(StepObserver observer);
StepObserver step_observer();

// For its lifetime, tells the observer (if any) that the process is working
// with `provider` outside a step: the step text is "while <what>" ("while
// loading its plugin", "while creating the kernel of Relu 'r'"); the
// destructor clears it (both strings ""). Plugins' constructors, create,
// availability, claims and kernel creation run inside one, so a crash there
// is named as a kernel's is.
class ProviderActivity {
 public:
  ProviderActivity(const std::string& provider, const std::string& what);
  ~ProviderActivity();
  ProviderActivity(const ProviderActivity&) = delete;
  ProviderActivity& operator=(const ProviderActivity&) = delete;

 private:
  StepObserver observer_;
};

}  // namespace onyx::runtime
