#include "isolate/worker_process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "plugin/search_dirs.h"
#include "session/run_options.h"

extern char** environ;

namespace onyx::runtime::isolate {

namespace {

constexpr const char* kWorkerName = "onyx-worker";

Deadline deadline_after(double seconds) {
  if (seconds <= 0) return Deadline::max();
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

std::string describe_exit(int status) {
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "stopped";
}

}  // namespace

StatusOr<std::string> find_worker_executable() {
  std::vector<std::string> dirs = plugin_search_dirs({}, "ONYX_WORKER_PATH", "workers");
  for (const std::string& dir : dirs) {
    std::string path = (std::filesystem::path(dir) / kWorkerName).string();
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  std::string looked;
  for (const std::string& dir : dirs) looked += (looked.empty() ? "" : ", ") + dir;
  return not_found(std::string("isolated mode: the worker executable '") + kWorkerName + "' is in none of: " + looked);
}

StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::start(WorkerConfig config, double run_timeout_s) {
  ONYX_ASSIGN_OR_RETURN(std::string executable, find_worker_executable());
  std::unique_ptr<WorkerProcess> worker(new WorkerProcess());
  worker->config_ = std::move(config);
  worker->executable_ = std::move(executable);
  worker->timeout_s_ = run_timeout_s;
  ONYX_RETURN_IF_ERROR(worker->spawn(run_timeout_s));
  return worker;
}

WorkerProcess::~WorkerProcess() { stop(); }

Status WorkerProcess::spawn(double timeout_s) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return internal_error(errno_text("socketpair"));
  const int memory = ::memfd_create("onyx-step-record", MFD_CLOEXEC);
  if (memory < 0 || ::ftruncate(memory, sizeof(StepRecord)) != 0) {
    const Status error = internal_error(errno_text("memfd_create"));
    ::close(sv[0]);
    ::close(sv[1]);
    if (memory >= 0) ::close(memory);
    return error;
  }
  void* mapped = ::mmap(nullptr, sizeof(StepRecord), PROT_READ | PROT_WRITE, MAP_SHARED, memory, 0);
  // The worker finds its socket at fd 3 and the record at fd 4. Going through
  // two free fds first keeps one dup2 from overwriting the other's source.
  const int spare = std::max({sv[1], memory, 10}) + 1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], spare);
  posix_spawn_file_actions_adddup2(&actions, memory, spare + 1);
  posix_spawn_file_actions_adddup2(&actions, spare, 3);
  posix_spawn_file_actions_adddup2(&actions, spare + 1, 4);
  posix_spawn_file_actions_addclose(&actions, spare);
  posix_spawn_file_actions_addclose(&actions, spare + 1);
  std::string exe = executable_;
  char* argv[] = {exe.data(), nullptr};
  pid_t pid = -1;
  const int spawned = mapped == MAP_FAILED ? errno : ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(sv[1]);
  ::close(memory);
  if (spawned != 0) {
    ::close(sv[0]);
    if (mapped != MAP_FAILED) ::munmap(mapped, sizeof(StepRecord));
    return internal_error("isolated mode: cannot start " + exe + ": " + std::strerror(spawned));
  }
  {
    std::lock_guard<std::mutex> lock(kill_mutex_);
    pid_ = pid;
    killed_for_cancel_ = false;
  }
  socket_ = sv[0];
  record_ = static_cast<StepRecord*>(mapped);
  std::memset(record_, 0, sizeof(StepRecord));

  const Deadline deadline = deadline_after(timeout_s);
  IoResult io = send_frame(socket_, kConfig, encode_config(config_), deadline);
  uint32_t kind = 0;
  std::string payload;
  if (io == IoResult::kOk) io = recv_frame(socket_, &kind, &payload, deadline);
  if (io != IoResult::kOk) {
    std::string what = io == IoResult::kTimedOut ? "did not create its session within the run timeout"
                       : io == IoResult::kClosed ? "died while creating its session"
                                                 : "failed while creating its session";
    return worker_failure(what);
  }
  Reader reader(payload.data(), payload.size());
  Status created;
  if (kind != kReady || !reader.status(&created) || !reader.at_end())
    return worker_failure("sent a malformed reply to its configuration");
  if (!created.ok()) {
    stop();
    return created;
  }
  return Status();
}

void WorkerProcess::stop() {
  pid_t pid;
  {
    std::lock_guard<std::mutex> lock(kill_mutex_);
    pid = pid_;
    pid_ = -1;
  }
  if (pid > 0) {
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (socket_ >= 0) ::close(socket_);
  socket_ = -1;
  if (record_) ::munmap(record_, sizeof(StepRecord));
  record_ = nullptr;
}

Status WorkerProcess::worker_failure(const std::string& what) {
  pid_t pid;
  bool cancelled;
  {
    std::lock_guard<std::mutex> lock(kill_mutex_);
    pid = pid_;
    cancelled = killed_for_cancel_;
  }
  // The worker is killed in every case: after a timeout or garbage it may
  // still be alive; after a crash this is a no-op. Then it is reaped and its
  // exit read.
  std::string exit_text = "could not be reaped";
  if (pid > 0) {
    ::kill(pid, SIGKILL);
    int status = 0;
    pid_t reaped;
    while ((reaped = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (reaped == pid) exit_text = describe_exit(status);
  }
  std::string provider, step;
  if (record_) {
    provider = read_field(record_->provider, sizeof record_->provider);
    step = read_field(record_->step, sizeof record_->step);
  }
  {
    std::lock_guard<std::mutex> lock(kill_mutex_);
    pid_ = -1;  // reaped above
  }
  stop();
  // A step is a node's name, or what the worker was doing with a provider
  // outside runs (core/step_observer.h: "while loading its plugin").
  std::string where = step.empty()                ? " outside any node"
                      : step.rfind("while ", 0) == 0 ? ", " + step + " (provider '" + provider + "')"
                                                  : " in node " + step + " of provider '" + provider + "'";
  std::string message = cancelled ? "run cancelled: the isolated worker was killed" + where
                                  : "the isolated worker " + what + where + "; it " + exit_text;
  message += "; a new worker is started at the next run";
  return Status(ONYX_STATUS_UNAVAILABLE, message);
}

StatusOr<std::vector<Tensor>> WorkerProcess::run(const std::vector<std::pair<std::string, Tensor>>& inputs,
                                                 const std::vector<std::string>& output_names) {
  Writer request;
  request.u64(inputs.size());
  for (const auto& [name, tensor] : inputs) {
    if (dtype_size(tensor.dtype()) == 0)
      return invalid_argument("isolated mode: input '" + name + "' is " + dtype_name(tensor.dtype()) +
                              "; only fixed-size element types cross to the worker");
    request.str(name);
    request.tensor(tensor);
  }
  request.u64(output_names.size());
  for (const std::string& name : output_names) request.str(name);

  // The caller's RunOptions cancel this run, also while it waits for the
  // worker behind another run, but never that other run.
  const RunOptions* options = RunOptionsScope::current();
  const uint64_t generation = options ? options->cancel_generation() : 0;
  std::lock_guard<std::mutex> lock(run_mutex_);
  if (options && options->cancel_generation() != generation)
    return failed_precondition("run cancelled (its run options) before it reached the isolated worker");
  if (socket_ < 0) ONYX_RETURN_IF_ERROR(spawn(timeout_s_));
  std::memset(record_, 0, sizeof(StepRecord));
  struct InFlight {  // lets kill_run() act only while a run is in the worker
    WorkerProcess& w;
    explicit InFlight(WorkerProcess& worker) : w(worker) { set(true); }
    ~InFlight() { set(false); }
    void set(bool on) {
      std::lock_guard<std::mutex> guard(w.kill_mutex_);
      w.running_ = on;
    }
  } in_flight(*this);
  RunOptions::CancelHook cancel_hook(options, [this] { kill_run(); });
  const Deadline deadline = deadline_after(timeout_s_);
  IoResult io = send_frame(socket_, kRun, request.bytes(), deadline);
  uint32_t kind = 0;
  std::string payload;
  if (io == IoResult::kOk) io = recv_frame(socket_, &kind, &payload, deadline);
  if (io == IoResult::kTimedOut) {
    char what[96];
    std::snprintf(what, sizeof what, "was still running after the run timeout (%g s) and was killed", timeout_s_);
    return worker_failure(what);
  }
  if (io == IoResult::kGarbage) return worker_failure("sent a malformed message");
  if (io != IoResult::kOk) return worker_failure("died during the run");

  Reader reader(payload.data(), payload.size());
  Status status;
  uint64_t count = 0;
  if (kind != kResult || !reader.status(&status)) return worker_failure("sent a malformed result");
  if (!status.ok()) return reader.at_end() ? StatusOr<std::vector<Tensor>>(status)
                                           : worker_failure("sent a malformed result");
  std::vector<Tensor> outputs;
  if (!reader.u64(&count) || count > payload.size()) return worker_failure("sent a malformed result");
  for (uint64_t k = 0; k < count; ++k) {
    Tensor t;
    if (!reader.tensor(&t)) return worker_failure("sent a malformed result");
    outputs.push_back(std::move(t));
  }
  if (!reader.at_end()) return worker_failure("sent a malformed result");
  return outputs;
}

void WorkerProcess::kill_run() {
  std::lock_guard<std::mutex> lock(kill_mutex_);
  if (pid_ > 0 && running_) {
    killed_for_cancel_ = true;
    ::kill(pid_, SIGKILL);
  }
}

}  // namespace onyx::runtime::isolate
