// main.cpp: onyx-conformance, the conformance runner. It loads a provider
// exactly as an application would (the C API for models, the plugin ABI for
// the abi and claims suites) and says which cases pass. Usage: --help.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "abi_host.h"
#include "compare.h"
#include "report.h"
#include "suites.h"

namespace fs = std::filesystem;
using namespace onyx::conformance;

namespace {

const char* kUsage =
    "usage: onyx-conformance --provider NAME|PATH [--provider ...] [--suite abi,onnx-node,claims]\n"
    "                        [--filter REGEX] [--report DIR] [--corpus DIR]\n"
    "                        [--expectations [NAME=]FILE] [--write-expectations FILE] [--strict-declines]\n"
    "                        [--jobs N] [--timeout SECONDS] [--memory-limit GIB] [--verbose]\n"
    "                        [--list-tolerances]\n"
    "\n"
    "  --provider      a provider name (found as the C API finds it) or a plugin file; repeatable\n"
    "  --suite         comma-separated suites (default: abi,onnx-node,claims)\n"
    "  --filter        only cases whose name matches REGEX (ECMAScript, searched)\n"
    "  --report        write DIR/report.json and DIR/report.html\n"
    "  --corpus        folder of tests in the ONNX backend test layout; repeatable (case names are\n"
    "                  then prefixed by the folder's last two path components). Default:\n"
    "                  ../shared/onnx-backend-tests/node beside the source tree, else Debian's\n"
    "                  /usr/share/libonnx-testdata/data/node\n"
    "  --expectations  the provider's list of unsupported cases and expected failures\n"
    "  --write-expectations  write a regenerated list from this run (one provider only)\n"
    "  --strict-declines  onnx-node: a declined case fails unless the expectations list it (for a\n"
    "                  reference provider; by default a decline is reported as declined, not failed)\n"
    "  --jobs          worker processes (default: the number of cores)\n"
    "  --timeout       per-case time limit in seconds (default 60)\n"
    "  --verbose       print every case, and let workers print the runtime's own logs\n"
    "  --host-abi      1.0, 1.1 or 1.2 makes the runner a host that speaks only that ABI (default: 1.3)\n"
    "  --memory-limit  address-space limit per worker process in GiB (default: none; GPU\n"
    "                  runtimes reserve large address ranges, so set it for host-memory plugins)\n"
    "\n"
    "Exit status: 0 when nothing failed (expected failures, declined and unsupported cases are\n"
    "skipped), 1 when a case failed or a listed case passed unexpectedly, 2 on a usage error.\n";

struct Args {
  std::vector<std::string> providers;
  std::vector<std::string> suites{"abi", "onnx-node", "claims"};
  std::string filter = "";
  std::string report_dir;
  std::vector<std::string> corpora;
  std::map<std::string, std::string> expectations;  // provider ("" = every provider) -> file
  std::string write_expectations;
  int jobs = 0;
  double timeout_s = 60;
  double memory_limit_gib = 0;
  bool verbose = false;
  bool list_tolerances = false;
  bool strict_declines = false;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "onyx-conformance: " << message << "\n\n" << kUsage;
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  bool suites_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg == "--provider") {
      for (auto& p : split(value(), ',')) a.providers.push_back(p);
    } else if (arg == "--suite") {
      if (!suites_given) a.suites.clear();
      suites_given = true;
      for (auto& s : split(value(), ',')) a.suites.push_back(s);
    } else if (arg == "--filter") {
      a.filter = value();
    } else if (arg == "--report") {
      a.report_dir = value();
    } else if (arg == "--corpus") {
      a.corpora.push_back(value());
    } else if (arg == "--expectations") {
      std::string v = value();
      size_t eq = v.find('=');
      if (eq == std::string::npos) a.expectations[""] = v;
      else a.expectations[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (arg == "--write-expectations") {
      a.write_expectations = value();
    } else if (arg == "--jobs") {
      a.jobs = std::atoi(value().c_str());
      if (a.jobs < 1) usage_error("--jobs needs a positive number");
    } else if (arg == "--timeout") {
      a.timeout_s = std::atof(value().c_str());
      if (a.timeout_s <= 0) usage_error("--timeout needs a positive number of seconds");
    } else if (arg == "--memory-limit") {
      a.memory_limit_gib = std::atof(value().c_str());
      if (a.memory_limit_gib <= 0) usage_error("--memory-limit needs a positive number of GiB");
    } else if (arg == "--host-abi") {
      std::string v = value();
      if (v == "1.0") set_host_max_abi(ONYX_ABI_VERSION(1, 0));
      else if (v == "1.1") set_host_max_abi(ONYX_ABI_VERSION(1, 1));
      else if (v == "1.2") set_host_max_abi(ONYX_ABI_VERSION(1, 2));
      else if (v != "1.3") usage_error("--host-abi: 1.0, 1.1, 1.2 or 1.3");
    } else if (arg == "--strict-declines") {
      a.strict_declines = true;
    } else if (arg == "--verbose") {
      a.verbose = true;
    } else if (arg == "--list-tolerances") {
      a.list_tolerances = true;
    } else {
      usage_error("unknown argument '" + arg + "'");
    }
  }
  if (a.list_tolerances) return a;
  if (a.providers.empty()) usage_error("--provider is required");
  for (const auto& s : a.suites)
    if (s != "abi" && s != "onnx-node" && s != "claims")
      usage_error("unknown suite '" + s + "' (known: abi, onnx-node, claims)");
  if (!a.write_expectations.empty() && a.providers.size() != 1)
    usage_error("--write-expectations needs exactly one --provider");
  if (a.jobs == 0) a.jobs = std::max(1, int(sysconf(_SC_NPROCESSORS_ONLN)));
  return a;
}

std::string default_corpus() {
  const std::vector<std::string> candidates = {
#ifdef ONYX_CONFORMANCE_SOURCE_DIR
      std::string(ONYX_CONFORMANCE_SOURCE_DIR) + "/../shared/onnx-backend-tests/node",
#endif
      "/usr/share/libonnx-testdata/data/node",
  };
  std::error_code ec;
  for (const auto& c : candidates)
    if (fs::is_directory(c, ec)) return fs::weakly_canonical(c, ec).string();
  return candidates.front();
}

void print_tolerances() {
  size_t n = 0;
  const ToleranceRow* rows = tolerance_table(&n);
  std::printf("%-26s %-8s %-8s %s\n", "op", "rtol", "atol", "reason");
  for (size_t i = 0; i < n; ++i)
    std::printf("%-26s %-8g %-8g %s\n", rows[i].op, rows[i].rtol, rows[i].atol, rows[i].reason);
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);
  if (args.list_tolerances) {
    print_tolerances();
    return 0;
  }
  std::regex filter;
  try {
    filter = std::regex(args.filter, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    usage_error("--filter '" + args.filter + "' is not a valid regular expression: " + e.what());
  }
  SuiteOptions options;
  options.filter = &filter;
  options.corpora = args.corpora.empty() ? std::vector<std::string>{default_corpus()} : args.corpora;
  options.isolation.jobs = args.jobs;
  options.isolation.case_timeout_s = args.timeout_s;
  options.isolation.memory_limit_bytes = size_t(args.memory_limit_gib * double(size_t(1) << 30));
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // ASan and TSan map terabytes of shadow address space at start-up: under
  // an address-space limit every worker dies before its case begins.
  if (options.isolation.memory_limit_bytes) {
    std::fprintf(stderr, "onyx-conformance: --memory-limit is ignored in a sanitizer build\n");
    options.isolation.memory_limit_bytes = 0;
  }
#endif
  options.verbose = args.verbose;
  options.strict_declines = args.strict_declines;
  options.isolation.quiet_workers = !args.verbose;  // --verbose shows the runtime's own logs

  std::vector<CaseResult> all;
  std::vector<ExpectationFile> expectation_files;
  expectation_files.reserve(args.providers.size());
  for (const std::string& provider : args.providers) {
    const ExpectationFile* expectations = nullptr;
    auto it = args.expectations.find(provider);
    if (it == args.expectations.end()) it = args.expectations.find("");
    if (it != args.expectations.end()) {
      try {
        expectation_files.push_back(ExpectationFile::load(it->second));
      } catch (const std::exception& e) {
        std::cerr << "onyx-conformance: " << e.what() << "\n";
        return 2;
      }
      expectations = &expectation_files.back();
    }
    for (const std::string& suite : args.suites) {
      std::printf("== %s: suite %s\n", provider.c_str(), suite.c_str());
      std::fflush(stdout);
      std::vector<CaseResult> results;
      try {
        results = run_suite(suite, provider, options, expectations);
      } catch (const std::exception& e) {
        std::cerr << "onyx-conformance: " << provider << ", suite " << suite << ": " << e.what() << "\n";
        return 2;
      }
      Totals t = count(results);
      std::printf("%s %s: %d passed, %d failed, %d skipped (%d declined, %d unsupported, %d expected failures)\n",
                  provider.c_str(), suite.c_str(), t.passed, t.failures(), t.skipped(), t.declined,
                  t.unsupported, t.expected_failures);
      all.insert(all.end(), results.begin(), results.end());
    }
    if (expectations) {
      for (const Expectation& e : expectations->entries())
        if (e.matches == 0 && std::find(args.suites.begin(), args.suites.end(), e.suite) != args.suites.end() &&
            args.filter.empty())
          std::printf("note: %s:%d (%s %s) matched no case\n", expectations->path().c_str(), e.line,
                      e.suite.c_str(), e.pattern.c_str());
    }
    if (!args.write_expectations.empty()) {
      try {
        write_file_atomically(args.write_expectations, regenerate_expectations(expectations, all));
        std::printf("wrote %s\n", args.write_expectations.c_str());
      } catch (const std::exception& e) {
        std::cerr << "onyx-conformance: " << e.what() << "\n";
        return 2;
      }
    }
  }
  if (!args.report_dir.empty()) {
    try {
      std::vector<ProviderInfo> infos;
      for (const std::string& provider : args.providers) infos.push_back(describe_provider(provider));
      write_reports(args.report_dir, all, infos);
      std::printf("reports: %s/report.json, %s/report.html\n", args.report_dir.c_str(), args.report_dir.c_str());
    } catch (const std::exception& e) {
      std::cerr << "onyx-conformance: " << e.what() << "\n";
      return 2;
    }
  }
  Totals t = count(all);
  std::printf("%d passed, %d failed, %d skipped\n", t.passed, t.failures(), t.skipped());
  return t.failures() == 0 ? 0 : 1;
}
