// The out-of-process mode through the public C API (via onyx.hpp): a provider
// whose Relu segfaults, aborts or hangs (tests/plugins crash_*, triggered by
// an input whose first element is 666) fails that run with an error naming
// the provider and node, this process lives on, and the next run works on a
// new worker. Also: results equal in-process runs, cancelling, and workers
// that break the protocol (fake onyx-worker scripts via ONYX_WORKER_PATH).
// Links libonyx only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onyx/onyx.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "model_builder.h"

namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr float kFaultTrigger = 666.0f;

// x -> Relu -> Add(x) -> y: the test plugin takes Relu, the CPU provider Add.
std::string relu_add_model() {
  return onyx::testing::ModelBuilder()
      .input("x", {2, 3})
      .output("y", {2, 3})
      .node("Relu", {"x"}, {"r"}, "relu0")
      .node("Add", {"r", "x"}, {"y"}, "add0")
      .bytes();
}

onyx::Env test_env() {
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  env.add_provider_dir(ONYX_TEST_PLUGIN_DIR);
  return env;
}

std::unique_ptr<onyx::Session> open(onyx::Env& env, const std::string& provider, bool isolate, double timeout_s = 0) {
  onyx::SessionOptions options;
  options.provider(provider).provider("cpu").fallback(ONYX_FALLBACK_ALLOW);
  if (isolate) options.isolate(true, timeout_s);
  std::string model = relu_add_model();
  return std::make_unique<onyx::Session>(env, std::as_bytes(std::span<const char>(model.data(), model.size())),
                                         options);
}

onyx::Tensor input(float first) {
  auto x = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {2, 3});
  float* p = x.data<float>();
  const float values[6] = {first, -2.5f, 3.25f, -4.0f, 0.5f, 7.0f};
  for (int k = 0; k < 6; ++k) p[k] = values[k];
  return x;
}

std::vector<float> run(onyx::Session& session, const onyx::Tensor& x) {
  std::vector<onyx::Tensor> y = session.run({{"x", &x}});
  const float* p = y.at(0).data<float>();
  return std::vector<float>(p, p + y.at(0).size());
}

std::string failed_run(onyx::Session& session, const onyx::Tensor& x, OnyxStatusCode* code = nullptr) {
  try {
    session.run({{"x", &x}});
  } catch (const onyx::Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "(the run succeeded)";
}

TEST(CApiIsolation, IsolatedResultsEqualInProcessResults) {
  onyx::Env env = test_env();
  auto local = open(env, "decliner", false);
  auto isolated = open(env, "decliner", true);
  for (float first : {1.5f, -1.0f, 0.0f}) {
    EXPECT_EQ(run(*isolated, input(first)), run(*local, input(first)));
  }
  // The values API (what onyx run uses) goes to the worker too.
  const onyx::Value x = onyx::Value::tensor(input(2.0f));
  std::vector<onyx::Value> values = isolated->run_values({{"x", &x}});
  onyx::Tensor y = values.at(0).as_tensor();
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + y.size()), run(*local, input(2.0f)));
}

struct Fault {
  const char* provider;
  double timeout_s;
  const char* why;  // in the message
};

class CApiIsolationFault : public ::testing::TestWithParam<Fault> {};

TEST_P(CApiIsolationFault, TheRunFailsNamingProviderAndNodeAndTheNextRunWorks) {
  const Fault fault = GetParam();
  onyx::Env env = test_env();
  auto session = open(env, fault.provider, true, fault.timeout_s);
  const std::vector<float> expected = {2.0f, -2.5f, 6.5f, -4.0f, 1.0f, 14.0f};
  EXPECT_EQ(run(*session, input(1.0f)), expected);
  for (int round = 0; round < 2; ++round) {  // twice: the restarted worker is isolated too
    OnyxStatusCode code = ONYX_STATUS_OK;
    const auto start = Clock::now();
    std::string message = failed_run(*session, input(kFaultTrigger), &code);
    EXPECT_EQ(code, ONYX_STATUS_UNAVAILABLE) << message;
    EXPECT_THAT(message, HasSubstr("provider '" + std::string(fault.provider) + "'"));
    EXPECT_THAT(message, HasSubstr("node Relu 'relu0'"));
    EXPECT_THAT(message, HasSubstr(fault.why));
    if (fault.timeout_s > 0) {
      EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), fault.timeout_s + 2.0);
    }
    EXPECT_EQ(run(*session, input(1.0f)), expected) << "the next run must work on a new worker";
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, CApiIsolationFault,
                         ::testing::Values(Fault{"crash_segv", 0, "signal 11"}, Fault{"crash_abort", 0, "signal 6"},
                                           // 2 s: an ASan-built worker takes over 0.5 s to start.
                                           Fault{"crash_hang", 2.0, "run timeout (2 s)"}),
                         [](const auto& test) { return std::string(test.param.provider); });

// Faults before any run (tests/plugins crash_at, chosen by ONYX_TEST_CRASH_AT,
// which the worker inherits): an isolated session's worker creates its
// session first, so the fault kills the worker and session creation fails
// naming the provider and what it was doing; this process never loads the
// plugin, lives on, and the next session (no fault) works.
struct LoadFault {
  const char* at;
  const char* doing;  // in the message
  const char* exit;
};

class CApiIsolationLoadFault : public ::testing::TestWithParam<LoadFault> {};

TEST_P(CApiIsolationLoadFault, SessionCreationFailsNamingProviderAndPhase) {
  const LoadFault fault = GetParam();
  onyx::Env env = test_env();
  ::setenv("ONYX_TEST_CRASH_AT", fault.at, 1);
  std::string message = "(the session was created)";
  OnyxStatusCode code = ONYX_STATUS_OK;
  try {
    open(env, "crash_at", true);
  } catch (const onyx::Error& e) {
    message = e.what();
    code = e.code();
  }
  ::unsetenv("ONYX_TEST_CRASH_AT");
  EXPECT_EQ(code, ONYX_STATUS_UNAVAILABLE) << message;
  EXPECT_THAT(message, HasSubstr("died while creating its session"));
  EXPECT_THAT(message, HasSubstr(fault.doing));
  EXPECT_THAT(message, HasSubstr("crash_at"));
  EXPECT_THAT(message, HasSubstr(fault.exit));
  auto session = open(env, "crash_at", true);  // no fault now
  EXPECT_EQ(run(*session, input(1.0f)), (std::vector<float>{2.0f, -2.5f, 6.5f, -4.0f, 1.0f, 14.0f}));
}

INSTANTIATE_TEST_SUITE_P(
    Faults, CApiIsolationLoadFault,
    ::testing::Values(LoadFault{"load", "while loading its plugin", "signal 11"},
                      LoadFault{"create", "while loading its plugin", "signal 11"},
                      LoadFault{"availability", "while opening its device", "signal 11"},
                      LoadFault{"claims", "while asking which nodes it claims", "signal 11"},
                      LoadFault{"kernel_create", "while creating the kernel of Relu 'relu0'", "signal 11"},
                      LoadFault{"exit0", "while creating the kernel of Relu 'relu0'", "exited with code 0"}),
    [](const auto& test) { return std::string(test.param.at); });

TEST(CApiIsolation, WithoutIsolationTheSameFaultKillsTheProcess) {
  // The default stays in-process: nothing contains the provider's crash.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        onyx::Env env = test_env();
        auto session = open(env, "crash_segv", false);
        run(*session, input(kFaultTrigger));
      },
      "");
}

TEST(CApiIsolation, CancelKillsAHungWorker) {
  onyx::Env env = test_env();
  auto session = open(env, "crash_hang", true);  // no timeout: only cancel ends it
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    onyx_session_cancel_runs(session->get());
  });
  std::string message = failed_run(*session, input(kFaultTrigger));
  canceller.join();
  EXPECT_THAT(message, HasSubstr("run cancelled"));
  EXPECT_THAT(message, HasSubstr("node Relu 'relu0' of provider 'crash_hang'"));
  EXPECT_EQ(run(*session, input(1.0f))[0], 2.0f);
}

// A run's own options stop it in the worker too; a run started after the
// cancel (with the same options) is not affected.
TEST(CApiIsolation, CancellingARunsOptionsKillsItsWorker) {
  onyx::Env env = test_env();
  auto session = open(env, "crash_hang", true);
  onyx::RunOptions options;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    options.cancel();
  });
  std::string message;
  try {
    const onyx::Tensor x = input(kFaultTrigger);
    session->run({{"x", &x}}, {}, &options);
  } catch (const onyx::Error& e) {
    message = e.what();
  }
  canceller.join();
  EXPECT_THAT(message, HasSubstr("run cancelled"));
  EXPECT_THAT(message, HasSubstr("node Relu 'relu0' of provider 'crash_hang'"));
  const onyx::Tensor x = input(1.0f);
  EXPECT_EQ(session->run({{"x", &x}}, {}, &options).size(), 1u);
}

// The worker runs with the application's options: its runs hold the
// session's host memory limit too (here 16 bytes, less than Relu's output).
TEST(CApiIsolation, TheWorkerKeepsTheHostMemoryLimit) {
  onyx::Env env = test_env();
  onyx::SessionOptions options;
  options.provider("decliner").provider("cpu").fallback(ONYX_FALLBACK_ALLOW).host_memory_limit(16).isolate(true);
  std::string model = relu_add_model();
  onyx::Session session(env, std::as_bytes(std::span<const char>(model.data(), model.size())), options);
  OnyxStatusCode code = ONYX_STATUS_OK;
  const std::string message = failed_run(session, input(1.0f), &code);
  EXPECT_EQ(code, ONYX_STATUS_OUT_OF_MEMORY) << message;
  EXPECT_THAT(message, HasSubstr("more than the session's host memory limit of 16 bytes"));
}

TEST(CApiIsolation, NegativeTimeoutIsRefused) {
  onyx::SessionOptions options;
  try {
    options.isolate(true, -1);
    FAIL() << "a negative timeout must be refused";
  } catch (const onyx::Error& e) {
    EXPECT_EQ(e.code(), ONYX_STATUS_INVALID_ARGUMENT);
  }
}

// A fake onyx-worker (a shell script) found first through ONYX_WORKER_PATH.
class FakeWorker {
 public:
  explicit FakeWorker(const std::string& script) {
    dir_ = std::filesystem::temp_directory_path() / ("onyx-fake-worker-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const auto path = dir_ / "onyx-worker";
    std::ofstream(path) << "#!/bin/bash\n" << script << "\n";
    ::chmod(path.c_str(), 0755);
    ::setenv("ONYX_WORKER_PATH", dir_.c_str(), 1);
  }
  ~FakeWorker() {
    ::unsetenv("ONYX_WORKER_PATH");
    std::filesystem::remove_all(dir_);
  }

 private:
  std::filesystem::path dir_;
};

// A kReady frame with an OK status: kind 2, length 12, code 0, empty message.
const char* kReadyFrame = R"(printf '\x02\x00\x00\x00\x0c\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >&3)";

std::string creation_error(const std::string& script, double timeout_s) {
  FakeWorker fake(script);
  onyx::Env env = test_env();
  try {
    open(env, "decliner", true, timeout_s);
  } catch (const onyx::Error& e) {
    return e.what();
  }
  return "(the session was created)";
}

TEST(CApiIsolation, AWorkerThatBreaksTheProtocolIsAnErrorNotACrashOrHang) {
  // A length far beyond any payload.
  EXPECT_THAT(creation_error(R"(printf '\x02\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\x7f' >&3; sleep 30)", 0),
              HasSubstr("isolated worker failed while creating its session"));
  // Dies in the middle of a frame.
  EXPECT_THAT(creation_error(R"(printf '\x02\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00abc' >&3)", 0),
              HasSubstr("exited with code 0"));
  // Never answers: bounded by the run timeout.
  EXPECT_THAT(creation_error("sleep 30", 0.3), HasSubstr("did not create its session within the run timeout"));
  // Answers with the wrong frame kind.
  EXPECT_THAT(creation_error(R"(printf '\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >&3; sleep 30)", 0),
              HasSubstr("malformed reply"));
}

TEST(CApiIsolation, AGarbageResultFailsTheRunAndTheSessionLives) {
  // Ready, then a kResult (20 bytes: code 0, empty message, count 5) claiming
  // 5 outputs and carrying none.
  FakeWorker fake(std::string(kReadyFrame) +
                  R"(; printf '\x04\x00\x00\x00\x14\x00\x00\x00\x00\x00\x00\x00' >&3)"
                  R"(; printf '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00' >&3; sleep 30)");
  onyx::Env env = test_env();
  auto session = open(env, "decliner", true, 5);
  std::string message = failed_run(*session, input(1.0f));
  EXPECT_THAT(message, HasSubstr("malformed result"));
  EXPECT_THAT(message, HasSubstr("killed by signal 9"));
}

}  // namespace
