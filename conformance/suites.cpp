// suites.cpp: dispatch, and the onnx-node suite's driver (cases run in
// isolated worker processes; see isolation.h).
#include "suites.h"

#include <cstdio>
#include <stdexcept>

#include "abi_host.h"
#include "abi_suite.h"
#include "claims_suite.h"
#include "node_suite.h"

namespace onyx::conformance {

namespace {

std::vector<CaseResult> run_node_suite(const std::string& provider, const SuiteOptions& options,
                                       const ExpectationFile* expectations) {
  const std::vector<NodeCase> cases = find_node_cases(options.corpora, *options.filter);
  std::string from;
  for (const std::string& c : options.corpora) from += (from.empty() ? "" : ", ") + c;
  std::printf("%zu node cases from %s\n", cases.size(), from.c_str());
  std::fflush(stdout);
  std::vector<CaseResult> results(cases.size());
  // Runs in a worker process: each worker creates its own environment.
  auto run_case = [&](size_t i) {
    static OnyxEnv* env = nullptr;
    if (!env) {
      if (OnyxStatus* st = onyx_env_create(&env)) {
        RunResult r;
        r.error = std::string("onyx_env_create: ") + onyx_status_message(st);
        onyx_status_release(st);
        return r;
      }
    }
    return run_node_case(env, provider, cases[i]);
  };
  auto on_done = [&](size_t i, RunResult r) {
    if (r.op.empty()) {
      try {
        r.op = node_case_op(cases[i]);  // the worker died before reporting it
      } catch (const std::exception&) {
      }
    }
    results[i] = judge(provider, "onnx-node", cases[i].name, r, expectations, options.strict_declines);
    print_case(results[i], options.verbose);
  };
  run_isolated(cases.size(), run_case, on_done, options.isolation);
  return results;
}

std::string plugin_path(const std::string& provider) {
  try {
    return resolve_plugin_path(provider);
  } catch (const CaseError& e) {
    throw std::runtime_error(e.what());
  }
}

std::vector<CaseResult> run_abi_suite(const std::string& provider, const SuiteOptions& options,
                                      const ExpectationFile* expectations) {
  const std::string path = plugin_path(provider);
  std::vector<std::string> names;
  for (const std::string& n : abi_case_names())
    if (std::regex_search(n, *options.filter)) names.push_back(n);
  std::vector<CaseResult> results(names.size());
  run_isolated(
      names.size(), [&](size_t i) { return run_abi_case(names[i], path); },
      [&](size_t i, RunResult r) {
        if (r.op.empty()) r.op = "[abi] " + names[i];
        results[i] = judge(provider, "abi", names[i], r, expectations);
        print_case(results[i], options.verbose);
      },
      options.isolation);
  return results;
}

std::vector<CaseResult> run_claims_suite(const std::string& provider, const SuiteOptions& options,
                                         const ExpectationFile* expectations) {
  const std::string path = plugin_path(provider);
  const std::vector<NodeCase> cases = find_node_cases(options.corpora, *options.filter);
  std::vector<CaseResult> results(cases.size());
  run_isolated(
      cases.size(), [&](size_t i) { return run_claims_case(path, cases[i]); },
      [&](size_t i, RunResult r) {
        if (r.op.empty()) {
          try {
            r.op = node_case_op(cases[i]);
          } catch (const std::exception&) {
          }
        }
        results[i] = judge(provider, "claims", cases[i].name, r, expectations);
        print_case(results[i], options.verbose);
      },
      options.isolation);
  return results;
}

}  // namespace

ProviderInfo describe_provider(const std::string& provider) {
  ProviderInfo info;
  info.provider = provider;
  try {
    info.path = resolve_plugin_path(provider);
    auto p = LoadedPlugin::load(info.path);
    info.name = p->entry()->name;
    info.version = p->entry()->version ? p->entry()->version : "";
    info.abi = version_string(p->abi_version()) + " (plugin speaks " + version_string(p->entry()->min_abi_version) +
               "-" + version_string(p->entry()->max_abi_version) + ")";
    OpenDevice device(*p);
    info.device = device.properties().name;
  } catch (const std::exception& e) {
    info.error = e.what();
  }
  return info;
}

void print_case(const CaseResult& r, bool verbose) {
  const bool bad = r.outcome == Outcome::kFailed || r.outcome == Outcome::kUnexpectedPass;
  if (!bad && !verbose) return;
  std::string error = r.error.size() > 300 ? r.error.substr(0, 300) + "..." : r.error;
  std::printf("%-16s %s/%s%s%s\n", outcome_name(r.outcome), r.suite.c_str(), r.name.c_str(),
              error.empty() ? "" : ": ", error.c_str());
  std::fflush(stdout);
}

std::vector<CaseResult> run_suite(const std::string& suite, const std::string& provider,
                                  const SuiteOptions& options, const ExpectationFile* expectations) {
  if (suite == "abi") return run_abi_suite(provider, options, expectations);
  if (suite == "onnx-node") return run_node_suite(provider, options, expectations);
  if (suite == "claims") return run_claims_suite(provider, options, expectations);
  throw std::runtime_error("unknown suite '" + suite + "'");
}

}  // namespace onyx::conformance
