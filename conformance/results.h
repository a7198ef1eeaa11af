// results.h: what a suite reports for each case.
#pragma once

#include <string>
#include <vector>

#include "expectations.h"

namespace onyx::conformance {

// What running a case showed, before the provider's expectation list is
// applied. kDeclined: the provider declined (a node of) the case, with its
// reason in `error`; an honest answer, unlike a claim it cannot honour.
// kUnsupported: the runner cannot carry the case's values, or no device.
enum class RunStatus { kPassed, kFailed, kUnsupported, kDeclined };

struct RunResult {
  RunStatus status = RunStatus::kFailed;
  std::string op;     // the op under test ("" when unknown)
  std::string error;  // why it failed or is unsupported
  double max_error = 0;
  double seconds = 0;
};

// The final verdict, with the expectation list applied.
enum class Outcome {
  kPassed,
  kFailed,
  kUnsupported,      // listed as unsupported, or the runner cannot carry its values
  kDeclined,         // the provider declined it, and no line lists it
  kExpectedFailure,  // listed as xfail and failed (or was declined)
  kUnexpectedPass    // listed, but passes: the list must be updated (counts as a failure)
};

const char* outcome_name(Outcome outcome);

struct CaseResult {
  std::string provider;
  std::string suite;
  std::string name;
  std::string op;
  Outcome outcome = Outcome::kFailed;
  std::string error;
  double max_error = 0;
  double seconds = 0;
};

// Applies `expectations` (may be null) to a run result. A listed case that
// was declined is judged by its line (xfail: expected failure, unsupported:
// unsupported); an unlisted decline is kDeclined, or with `declines_fail`
// (the reference provider, which must run every case it does not list) a
// failure.
CaseResult judge(const std::string& provider, const std::string& suite, const std::string& name,
                 const RunResult& run, const ExpectationFile* expectations, bool declines_fail = false);

struct Totals {
  int passed = 0, failed = 0, unsupported = 0, declined = 0, expected_failures = 0, unexpected_passes = 0;
  int skipped() const { return unsupported + declined + expected_failures; }
  int failures() const { return failed + unexpected_passes; }
};
Totals count(const std::vector<CaseResult>& results);

}  // namespace onyx::conformance

namespace onyx::conformance {

// A fresh expectation file for one provider from a run: lines of `old` that
// still match a case that does not pass are kept as they are (pattern and
// reason); every failing case gets its own xfail line with the observed
// error as the reason (edit it into a real reason). Cases the run itself
// reports as declined or unsupported (values the runner cannot carry, no
// device) need no line.
std::string regenerate_expectations(const ExpectationFile* old, const std::vector<CaseResult>& results);

}  // namespace onyx::conformance
