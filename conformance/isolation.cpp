// isolation.cpp: the worker pool. Protocol over two pipes per worker: the
// parent writes a case index ("17\n"); the worker answers one line
// "status\tmax_error\tseconds\top\terror\n" (tabs and newlines escaped).
#include "isolation.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace onyx::conformance {

namespace {

using Clock = std::chrono::steady_clock;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char n = s[++i];
      out += n == 't' ? '\t' : n == 'n' ? '\n' : n;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string encode(const RunResult& r) {
  char numbers[96];
  std::snprintf(numbers, sizeof numbers, "%d\t%.17g\t%.6f\t", int(r.status), r.max_error, r.seconds);
  return numbers + escape(r.op) + "\t" + escape(r.error) + "\n";
}

RunResult decode(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (int k = 0; k < 4; ++k) {
    size_t tab = line.find('\t', start);
    if (tab == std::string::npos) throw std::runtime_error("malformed worker line");
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
  fields.push_back(line.substr(start));
  RunResult r;
  r.status = RunStatus(std::stoi(fields[0]));
  r.max_error = std::stod(fields[1]);
  r.seconds = std::stod(fields[2]);
  r.op = unescape(fields[3]);
  r.error = unescape(fields[4]);
  return r;
}

bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

[[noreturn]] void worker_main(int in_fd, int out_fd, const std::function<RunResult(size_t)>& run_case) {
  std::string pending;
  char buf[256];
  for (;;) {
    size_t newline;
    while ((newline = pending.find('\n')) == std::string::npos) {
      ssize_t n = ::read(in_fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(0);  // parent closed the pipe: no more work
      pending.append(buf, size_t(n));
    }
    const size_t index = std::stoul(pending.substr(0, newline));
    pending.erase(0, newline + 1);
    RunResult r;
    const auto start = Clock::now();
    try {
      r = run_case(index);
    } catch (const std::exception& e) {
      r.status = RunStatus::kFailed;
      r.error = e.what();
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (!write_all(out_fd, encode(r))) _exit(1);
  }
}

struct Worker {
  pid_t pid = -1;
  int to_worker = -1;
  int from_worker = -1;
  long current = -1;  // case index being run, -1 when idle
  Clock::time_point started;
  std::string received;
};

Worker spawn(const std::function<RunResult(size_t)>& run_case, const IsolationOptions& options) {
  int down[2], up[2];
  if (::pipe(down) != 0 || ::pipe(up) != 0) throw std::runtime_error("pipe failed: " + std::string(strerror(errno)));
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed: " + std::string(strerror(errno)));
  if (pid == 0) {
    // Keep only this worker's two pipe ends (as fds 3 and 4): an inherited
    // end of another worker's pipe would keep that worker from seeing EOF.
    const int in_copy = ::fcntl(down[0], F_DUPFD, 100), out_copy = ::fcntl(up[1], F_DUPFD, 100);
    ::dup2(in_copy, 3);
    ::dup2(out_copy, 4);
    ::close_range(5, ~0u, 0);
    if (options.quiet_workers) {
      int null_fd = ::open("/dev/null", O_WRONLY);
      if (null_fd >= 0) {
        ::dup2(null_fd, 1);
        ::dup2(null_fd, 2);
      }
    }
    if (options.memory_limit_bytes) {
      rlimit limit{options.memory_limit_bytes, options.memory_limit_bytes};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    worker_main(3, 4, run_case);
  }
  ::close(down[0]);
  ::close(up[1]);
  ::fcntl(down[1], F_SETFD, FD_CLOEXEC);
  ::fcntl(up[0], F_SETFD, FD_CLOEXEC);
  Worker w;
  w.pid = pid;
  w.to_worker = down[1];
  w.from_worker = up[0];
  return w;
}

// Closes the worker's pipes (an idle worker then exits) and reaps it.
void stop(Worker& w, bool kill_it) {
  if (w.pid > 0 && kill_it) ::kill(w.pid, SIGKILL);
  if (w.to_worker >= 0) ::close(w.to_worker);
  if (w.from_worker >= 0) ::close(w.from_worker);
  int status = 0;
  if (w.pid > 0) ::waitpid(w.pid, &status, 0);
  w = Worker{};
}

std::string death_reason(int status) {
  if (WIFSIGNALED(status))
    return "the worker process crashed with signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ") while running this case";
  return "the worker process exited with code " + std::to_string(WEXITSTATUS(status)) +
         " while running this case";
}

}  // namespace

void run_isolated(size_t count, const std::function<RunResult(size_t)>& run_case,
                  const std::function<void(size_t, RunResult)>& on_done,
                  const IsolationOptions& options) {
  ::signal(SIGPIPE, SIG_IGN);
  size_t next = 0, done = 0;
  std::vector<Worker> workers(size_t(std::max(1, options.jobs)));
  auto assign = [&](Worker& w) {
    if (next >= count) {
      stop(w, false);
      return;
    }
    if (w.pid < 0) w = spawn(run_case, options);
    w.current = long(next++);
    w.started = Clock::now();
    if (!write_all(w.to_worker, std::to_string(w.current) + "\n")) {
      // The worker died idle (should not happen); retry the case on a new one.
      stop(w, true);
      --next;
      w = spawn(run_case, options);
      w.current = long(next++);
      write_all(w.to_worker, std::to_string(w.current) + "\n");
    }
  };
  // Reports the worker's current case as failed and replaces the worker.
  auto fail_current = [&](Worker& w, bool kill_it, std::string why) {
    RunResult r;
    r.status = RunStatus::kFailed;
    r.error = std::move(why);
    r.seconds = std::chrono::duration<double>(Clock::now() - w.started).count();
    const size_t index = size_t(w.current);
    stop(w, kill_it);
    ++done;
    on_done(index, std::move(r));
    assign(w);
  };
  for (Worker& w : workers) assign(w);

  while (done < count) {
    std::vector<pollfd> fds;
    std::vector<Worker*> polled;
    int timeout_ms = 1000;
    const auto now = Clock::now();
    for (Worker& w : workers) {
      if (w.current < 0) continue;
      fds.push_back({w.from_worker, POLLIN, 0});
      polled.push_back(&w);
      double left = options.case_timeout_s - std::chrono::duration<double>(now - w.started).count();
      timeout_ms = std::min(timeout_ms, std::max(0, int(left * 1000) + 1));
    }
    if (fds.empty()) break;
    ::poll(fds.data(), fds.size(), timeout_ms);
    for (size_t k = 0; k < fds.size(); ++k) {
      Worker& w = *polled[k];
      if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        ssize_t n = ::read(w.from_worker, buf, sizeof buf);
        if (n > 0) {
          w.received.append(buf, size_t(n));
          size_t newline = w.received.find('\n');
          if (newline != std::string::npos) {
            RunResult r;
            try {
              r = decode(w.received.substr(0, newline));
            } catch (const std::exception&) {
              r.status = RunStatus::kFailed;
              r.error = "malformed result from the worker process";
            }
            w.received.erase(0, newline + 1);
            const size_t index = size_t(w.current);
            w.current = -1;
            ++done;
            on_done(index, std::move(r));
            assign(w);
          }
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        // End of file: the worker died in the middle of the case.
        int status = 0;
        ::waitpid(w.pid, &status, 0);
        w.pid = -1;  // reaped; stop() only closes the pipes
        fail_current(w, false, death_reason(status));
        continue;
      }
      const double ran = std::chrono::duration<double>(Clock::now() - w.started).count();
      if (ran > options.case_timeout_s) {
        char why[128];
        std::snprintf(why, sizeof why, "timed out: still running after %.0f s (the per-case limit)",
                      options.case_timeout_s);
        fail_current(w, true, why);
      }
    }
  }
  for (Worker& w : workers) stop(w, false);
}

}  // namespace onyx::conformance
