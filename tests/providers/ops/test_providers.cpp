// test_providers.cpp: the provider list and the plugins loaded for tests.
#include "test_providers.h"

#include <gtest/gtest-spi.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include "expectations.h"

namespace onyx::test {

namespace {

// name=path pairs of the plugins built with this test, reference first
// (ONYX_TEST_PROVIDER_PLUGINS, set by CMake: "cpu=/.../libonyx_provider_cpu.so,...").
std::vector<std::pair<std::string, std::string>> built_plugins() {
  std::vector<std::pair<std::string, std::string>> out;
  // $ONYX_TEST_PROVIDER_PLUGINS (same form) replaces the list: a build
  // carried to another machine (scripts/gpu-check.sh) names its plugins there.
  const char* env = std::getenv("ONYX_TEST_PROVIDER_PLUGINS");
  std::stringstream in(env && *env ? env : ONYX_TEST_PROVIDER_PLUGINS);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) out.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return out;
}

bool wanted(const std::string& name) {
  const char* only = std::getenv("ONYX_TEST_PROVIDERS");
  if (!only || !*only) return true;
  std::stringstream in(only);
  std::string item;
  while (std::getline(in, item, ','))
    if (item == name) return true;
  return false;
}

std::mutex& load_mutex() {
  static std::mutex m;
  return m;
}

const TestProvider*& current() {
  static const TestProvider* provider = nullptr;
  return provider;
}

}  // namespace

const std::vector<TestProvider>& test_providers() {
  static const std::vector<TestProvider> providers = [] {
    std::vector<TestProvider> list;
    for (const auto& [name, path] : built_plugins()) {
      TestProvider p{name, path, name == "cpu"};
      if (!p.reference && !wanted(name)) continue;
      if (!std::filesystem::exists(path)) {
        std::fprintf(stderr, "op tests: provider %s left out: %s is not built\n", name.c_str(), path.c_str());
        continue;
      }
      // A plugin without its device here (no GPU) is left out, saying why; one
      // that does not load stays in, so that its tests fail.
      try {
        load_provider(p);
      } catch (const conformance::DeviceUnavailable& e) {
        std::fprintf(stderr, "op tests: provider %s left out: %s\n", name.c_str(), e.what());
        continue;
      } catch (const std::exception&) {
      }
      list.push_back(std::move(p));
    }
    return list;
  }();
  return providers;
}

const LoadedProvider& load_provider(const TestProvider& provider) {
  static std::map<std::string, LoadedProvider> loaded;
  std::lock_guard<std::mutex> lock(load_mutex());
  LoadedProvider& p = loaded[provider.plugin_path];
  if (!p.device) {  // load (again) until a device is open: the error is the caller's
    p.device.reset();
    p.plugin = conformance::LoadedPlugin::load(provider.plugin_path);
    p.device = std::make_unique<conformance::OpenDevice>(*p.plugin);
  }
  return p;
}

const TestProvider& current_provider() {
  if (!current()) current() = &test_providers().front();
  return *current();
}

void set_current_provider(const TestProvider& provider) { current() = &provider; }

namespace {

// Known failures of providers other than the reference, one line each:
// "xfail op-tests <Suite.Test/param glob> <reason>" (the conformance
// expectation-file format).
const conformance::ExpectationFile& known_failures() {
  static const conformance::ExpectationFile list =
      conformance::ExpectationFile::load(ONYX_SOURCE_DIR "/tests/providers/ops/known_failures.txt");
  return list;
}

}  // namespace

void run_op_test(const std::function<void()>& body) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = std::string(info->test_suite_name()) + "." + info->name();
  const conformance::Expectation* known = known_failures().find("op-tests", name);
  std::string declined;
  if (!known) {
    try {
      body();
    } catch (const ProviderDeclined& e) {
      declined = e.what();
    }
    if (!declined.empty()) GTEST_SKIP() << current_provider().name << " declines: " << declined;
    return;
  }
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    try {
      body();
    } catch (const ProviderDeclined& e) {
      declined = e.what();
    }
  }
  const std::string where = known_failures().path() + ":" + std::to_string(known->line);
  for (int i = 0; i < results.size(); ++i) {
    if (!results.GetTestPartResult(i).failed()) continue;
    GTEST_SKIP() << "known failure (" << where << "): " << known->reason
                 << "\nfirst failure: " << results.GetTestPartResult(i).message();
  }
  if (!declined.empty())
    GTEST_SKIP() << current_provider().name << " declines: " << declined << " (before the known failure listed at "
                 << where << " showed)";
  ADD_FAILURE() << name << " is listed as a known failure at " << where << " but passes: remove the line";
}

std::string provider_param_name(const ::testing::TestParamInfo<TestProvider>& info) { return info.param.name; }

void PrintTo(const TestProvider& provider, std::ostream* os) { *os << provider.name; }

}  // namespace onyx::test
