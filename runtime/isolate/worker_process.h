// worker_process.h: the parent's side of the out-of-process mode. A
// WorkerProcess spawns the onyx-worker executable (posix_spawn: no code runs
// in a forked copy of this multi-threaded process), hands it the model and
// session options, and forwards runs to it over a socket. When the worker
// crashes, or a run outlives the timeout (the worker is then SIGKILLed), the
// run fails with an error naming the provider and step the worker was in, and
// the next run starts a fresh worker.
// Thread-safety: run() may be called from several threads; runs are
// serialized (one worker, one run at a time). kill_run() may be called from
// any thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "isolate/step_record.h"
#include "isolate/wire.h"

namespace onyx::runtime::isolate {

// Where the worker executable is: the plugin search folders of kind
// "workers" (ONYX_WORKER_PATH, <exe>/../lib/onyx/workers, <libonyx dir>/onyx/workers).
StatusOr<std::string> find_worker_executable();

class WorkerProcess {
 public:
  // Spawns the worker and waits until it has created its session (bounded by
  // `run_timeout_s` when positive): its errors are creation errors.
  static StatusOr<std::unique_ptr<WorkerProcess>> start(WorkerConfig config, double run_timeout_s);
  ~WorkerProcess();  // closes the socket, kills and reaps the worker

  StatusOr<std::vector<Tensor>> run(const std::vector<std::pair<std::string, Tensor>>& inputs,
                                    const std::vector<std::string>& output_names);
  // Kills the worker; the run in flight fails with a "cancelled" error.
  void kill_run();
  pid_t pid() const { return pid_; }  // for tests; -1 between workers

 private:
  WorkerProcess() = default;
  Status spawn(double timeout_s);
  void stop();
  // Why the run failed when the worker went away or sent something else than
  // a frame: reaps it and names the step it was in.
  Status worker_failure(const std::string& what);

  WorkerConfig config_;
  std::string executable_;
  double timeout_s_ = 0;
  std::mutex run_mutex_;
  pid_t pid_ = -1;
  int socket_ = -1;
  StepRecord* record_ = nullptr;  // mmap'd memfd shared with the worker
  std::mutex kill_mutex_;
  bool running_ = false;
  bool killed_for_cancel_ = false;
};

}  // namespace onyx::runtime::isolate
