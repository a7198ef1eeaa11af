// results.cpp: judging a run against the expectation list.
#include "results.h"

#include <algorithm>

namespace onyx::conformance {

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPassed: return "pass";
    case Outcome::kFailed: return "fail";
    case Outcome::kUnsupported: return "unsupported";
    case Outcome::kDeclined: return "declined";
    case Outcome::kExpectedFailure: return "expected_failure";
    case Outcome::kUnexpectedPass: return "unexpected_pass";
  }
  return "?";
}

CaseResult judge(const std::string& provider, const std::string& suite, const std::string& name,
                 const RunResult& run, const ExpectationFile* expectations, bool declines_fail) {
  CaseResult r{provider, suite, name, run.op, Outcome::kFailed, run.error, run.max_error, run.seconds};
  const Expectation* listed = expectations ? expectations->find(suite, name) : nullptr;
  if (listed) ++listed->matches;
  const std::string where =
      listed ? expectations->path() + ":" + std::to_string(listed->line) : std::string();
  switch (run.status) {
    case RunStatus::kPassed:
      r.outcome = listed ? Outcome::kUnexpectedPass : Outcome::kPassed;
      if (listed)
        r.error = std::string("listed as ") + expectation_keyword(listed->kind) + " at " + where +
                  " but passes: remove it from the list";
      break;
    case RunStatus::kUnsupported:
      r.outcome = Outcome::kUnsupported;
      break;
    case RunStatus::kDeclined:
      if (!listed) {
        r.outcome = declines_fail ? Outcome::kFailed : Outcome::kDeclined;
        if (declines_fail) r.error += " (a decline the expectation list does not name)";
        break;
      }
      [[fallthrough]];  // a listed decline is judged by its line, as a failure would be
    case RunStatus::kFailed:
      if (!listed) break;
      r.outcome = listed->kind == ExpectationKind::kUnsupported ? Outcome::kUnsupported
                                                                : Outcome::kExpectedFailure;
      r.error = listed->reason + " (" + where + "; observed: " + run.error + ")";
      break;
  }
  return r;
}

Totals count(const std::vector<CaseResult>& results) {
  Totals t;
  for (const CaseResult& r : results) {
    switch (r.outcome) {
      case Outcome::kPassed: ++t.passed; break;
      case Outcome::kFailed: ++t.failed; break;
      case Outcome::kUnsupported: ++t.unsupported; break;
      case Outcome::kDeclined: ++t.declined; break;
      case Outcome::kExpectedFailure: ++t.expected_failures; break;
      case Outcome::kUnexpectedPass: ++t.unexpected_passes; break;
    }
  }
  return t;
}

}  // namespace onyx::conformance

namespace onyx::conformance {

namespace {

// The error on one line: lines joined with " / ", runs of spaces collapsed,
// cut at `limit` characters.
std::string one_line(const std::string& text, size_t limit) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      if (!out.empty()) out += " /";
      c = ' ';
    }
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.size() > limit ? out.substr(0, limit) + "..." : out;
}

}  // namespace

std::string regenerate_expectations(const ExpectationFile* old, const std::vector<CaseResult>& results) {
  std::string out =
      "# Conformance expectations: the cases this provider does not pass, each with a reason.\n"
      "# Format (conformance/README.md): <unsupported|xfail> <suite> <case glob> <reason>\n"
      "# unsupported: permanently out of scope; xfail: a known gap, to be fixed (a listed case\n"
      "# that passes fails the run). Regenerate with onyx-conformance --write-expectations FILE;\n"
      "# lines still matching a case that does not pass are kept with their reasons.\n";
  std::vector<const CaseResult*> uncovered;
  std::vector<const Expectation*> kept;
  for (const CaseResult& r : results) {
    if (r.outcome == Outcome::kPassed || r.outcome == Outcome::kUnexpectedPass) continue;
    const Expectation* e = old ? old->find(r.suite, r.name) : nullptr;
    if (e) {
      if (std::find(kept.begin(), kept.end(), e) == kept.end()) kept.push_back(e);
      continue;
    }
    // Declines, values the runner cannot carry and missing devices are
    // reported as such by every run: a line would add nothing.
    if (r.outcome == Outcome::kUnsupported || r.outcome == Outcome::kDeclined) continue;
    uncovered.push_back(&r);
  }
  std::sort(kept.begin(), kept.end(), [](auto* a, auto* b) { return a->line < b->line; });
  for (const Expectation* e : kept)
    out += std::string(expectation_keyword(e->kind)) + " " + e->suite + " " + e->pattern + " " + e->reason + "\n";
  for (const CaseResult* r : uncovered) {
    std::string reason = one_line(r->error, 200);
    if (reason.empty()) reason = "fails (no message)";
    out += "xfail " + r->suite + " " + r->name + " " + reason + "\n";
  }
  return out;
}

}  // namespace onyx::conformance
