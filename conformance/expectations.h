// expectations.h: a provider's list of cases it does not pass, each with a
// reason (format documented in conformance/README.md):
//
//   # comment
//   unsupported <suite> <case pattern> <reason>   permanently out of scope
//   xfail       <suite> <case pattern> <reason>   a known bug or gap, to be fixed
//
// Patterns are shell globs (fnmatch) over case names. A listed case that
// passes is reported as an unexpected pass (a failure), so the list stays true.
#pragma once

#include <string>
#include <vector>

namespace onyx::conformance {

enum class ExpectationKind { kUnsupported, kExpectedFailure };

struct Expectation {
  ExpectationKind kind;
  std::string suite;
  std::string pattern;
  std::string reason;
  int line = 0;
  mutable int matches = 0;  // cases this line matched in the run
};

class ExpectationFile {
 public:
  // Reads `path`; throws std::runtime_error naming the file and line on a
  // malformed line (unknown kind, missing reason).
  static ExpectationFile load(const std::string& path);

  // The first line matching the case, or nullptr.
  const Expectation* find(const std::string& suite, const std::string& case_name) const;
  const std::vector<Expectation>& entries() const { return entries_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<Expectation> entries_;
};

const char* expectation_keyword(ExpectationKind kind);

}  // namespace onyx::conformance
