// step_observer.h: a process-wide hook called before every step a session
// executes. The out-of-process worker (runtime/isolate) installs one that
// publishes the step into shared memory, so that when a kernel crashes or
// hangs the parent can say which provider and node it was in. The core only
// passes the step's own name and its device's provider label along.
#pragma once

namespace onyx::runtime {

// `provider` is the device's provider label ("host" for steps the host runs);
// both strings live until the step ends. Must not throw; must be cheap.
using StepObserver = void (*)(const char* provider, const char* step);

// Installs (or with nullptr removes) the observer. Thread-safe; meant to be
// set once at process start, before sessions run.
void set_step_observer(StepObserver observer);
StepObserver step_observer();

}  // namespace onyx::runtime
