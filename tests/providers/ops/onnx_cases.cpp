// onnx_cases.cpp: the ONNX node tests of an op family on one provider.
#include "onnx_cases.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <vector>

#include "expectations.h"
#include "kernel_case.h"
#include "test_providers.h"

namespace onyx::test {

namespace {

namespace cf = onyx::conformance;

// The corpus: $ONYX_ONNX_NODE_TESTS, else the one the conformance tests use
// unless that is Debian's onnx 1.12 corpus, some of whose expected data is
// known to be wrong (providers/cpu/conformance-onnx-1.12.txt): the conformance
// suite runs that one, with its list.
std::string corpus_dir() {
  const char* env = std::getenv("ONYX_ONNX_NODE_TESTS");
  if (env && *env) return env;
  const std::string configured = ONYX_CONFORMANCE_CORPUS;
  return configured.rfind("/usr/share/libonnx-testdata", 0) == 0 ? std::string() : configured;
}

struct OpCase {
  cf::NodeCase c;
  std::string op;
};

// Every case of the corpus with the op it tests (read once per process).
const std::vector<OpCase>& corpus_cases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> out;
    try {
      if (corpus_dir().empty()) return out;
      for (const cf::NodeCase& c : cf::find_node_cases({corpus_dir()}, std::regex("")))
        out.push_back({c, cf::node_case_op(c)});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ONNX node tests unreadable: %s\n", e.what());
    }
    return out;
  }();
  return cases;
}

// The reference provider's expectation list (providers/cpu/conformance.txt):
// its `unsupported` lines are cases whose expected data no provider can
// reproduce (random numbers), its `xfail` lines the cases it declines.
const cf::ExpectationFile& reference_list() {
  static const cf::ExpectationFile list =
      cf::ExpectationFile::load(ONYX_SOURCE_DIR "/providers/cpu/conformance.txt");
  return list;
}

}  // namespace

void run_onnx_family(const std::string& family, const std::set<std::string>& ops, const OnnxFamilyOptions& options) {
  if (corpus_cases().empty())
    GTEST_SKIP() << "no ONNX node tests (the shared corpus, or $ONYX_ONNX_NODE_TESTS); "
                 << "the conformance suite runs " << ONYX_CONFORMANCE_CORPUS;
  const TestProvider& provider = current_provider();
  const LoadedProvider& loaded = load_provider(provider);
  cf::KernelCaseOptions as_given, varied;
  if (provider.reference) {
    // The ONNX runner's tolerance, which the CPU kernels have always met;
    // other providers get the conformance table's per-op bounds.
    as_given.tolerance = [&](const std::string&, int32_t) {
      return cf::Tolerance{1e-3, options.reference_atol, "the ONNX backend runner's tolerance"};
    };
  }
  varied.tolerance = as_given.tolerance;
  varied.run = {3, true};
  varied.hide_shapes = true;

  int pass = 0, declined = 0, skipped = 0, total = 0;
  std::string first_decline;
  for (const OpCase& oc : corpus_cases()) {
    if (!ops.count(oc.op)) continue;
    ++total;
    const cf::Expectation* listed = reference_list().find("onnx-node", oc.c.name);
    if (listed && listed->kind == cf::ExpectationKind::kUnsupported) {
      ++skipped;  // e.g. random numbers drawn by numpy's generator
      continue;
    }
    cf::RunResult r = cf::run_kernel_case(*loaded.plugin, *loaded.device, oc.c, as_given);
    if (r.status == cf::RunStatus::kPassed) {
      cf::RunResult again = cf::run_kernel_case(*loaded.plugin, *loaded.device, oc.c, varied);
      // Another provider may need the shapes to claim a node; the reference
      // must run every case it runs as given without them too.
      const bool may_decline = !provider.reference && again.status == cf::RunStatus::kDeclined;
      if (again.status != cf::RunStatus::kPassed && !may_decline) {
        r = again;
        r.error = "with 3 threads, outputs in place and shapes hidden: " + r.error;
      }
    }
    switch (r.status) {
      case cf::RunStatus::kPassed: ++pass; break;
      case cf::RunStatus::kFailed: ADD_FAILURE() << oc.c.name << " (" << oc.op << "): " << r.error; break;
      case cf::RunStatus::kDeclined:
        ++declined;
        if (first_decline.empty()) first_decline = oc.c.name + ": " + r.error;
        if (provider.reference) {
          EXPECT_NE(listed, nullptr) << oc.c.name << " (" << oc.op << ") was " << r.error << ", and "
                                     << reference_list().path() << " does not list it";
        }
        break;
      case cf::RunStatus::kUnsupported: ++skipped; break;  // several nodes, or values not tensors
    }
  }
  std::printf("ONNX node tests, %s ops on %s: %d passed, %d declined, %d skipped of %d\n", family.c_str(),
              provider.name.c_str(), pass, declined, skipped, total);
  if (total == 0) {
    GTEST_SKIP() << "the corpus has no case of these ops";
  } else if (provider.reference) {
    EXPECT_GT(pass, 0);
  } else if (pass == 0 && declined > 0 && !::testing::Test::HasFailure()) {
    GTEST_SKIP() << provider.name << " declines every case: " << first_decline;
  }
}

}  // namespace onyx::test
