// expectations.cpp: parsing a provider's conformance.txt.
#include "expectations.h"

#include <fnmatch.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace onyx::conformance {

const char* expectation_keyword(ExpectationKind kind) {
  return kind == ExpectationKind::kUnsupported ? "unsupported" : "xfail";
}

ExpectationFile ExpectationFile::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open expectation file '" + path + "'");
  ExpectationFile file;
  file.path_ = path;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = path + ":" + std::to_string(number);
    std::istringstream words(line);
    std::string kind;
    if (!(words >> kind) || kind[0] == '#') continue;
    Expectation e;
    e.line = number;
    if (kind == "unsupported") {
      e.kind = ExpectationKind::kUnsupported;
    } else if (kind == "xfail") {
      e.kind = ExpectationKind::kExpectedFailure;
    } else {
      throw std::runtime_error(where + ": unknown kind '" + kind + "' (expected 'unsupported' or 'xfail')");
    }
    if (!(words >> e.suite >> e.pattern))
      throw std::runtime_error(where + ": expected '" + kind + " <suite> <case pattern> <reason>'");
    std::getline(words >> std::ws, e.reason);
    if (e.reason.empty()) throw std::runtime_error(where + ": '" + e.pattern + "' has no reason");
    file.entries_.push_back(std::move(e));
  }
  return file;
}

const Expectation* ExpectationFile::find(const std::string& suite, const std::string& case_name) const {
  for (const Expectation& e : entries_)
    if (e.suite == suite && fnmatch(e.pattern.c_str(), case_name.c_str(), 0) == 0) return &e;
  return nullptr;
}

}  // namespace onyx::conformance
