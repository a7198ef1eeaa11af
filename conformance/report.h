// report.h: the run's reports. report.json holds every case (provider,
// suite, case, op, status, error, max_error, seconds); report.html is a
// page a vendor can publish: a matrix of ops x providers (pass / fail /
// declined / unsupported / expected failure) and the list of cases that did
// not pass.
// Both are written atomically (temporary file, fsync, rename).
#pragma once

#include <string>
#include <vector>

#include "results.h"

namespace onyx::conformance {

// What the report says about each provider tested.
struct ProviderInfo {
  std::string provider;  // as given with --provider (the results' key)
  std::string path, name, version, abi, device;
  std::string error;  // why the plugin could not be described, if so
};

std::string results_json(const std::vector<CaseResult>& results, const std::vector<ProviderInfo>& providers);
std::string results_html(const std::vector<CaseResult>& results, const std::vector<ProviderInfo>& providers);

// Writes report.json and report.html into `dir` (created if missing).
// Throws std::runtime_error naming the file on failure.
void write_reports(const std::string& dir, const std::vector<CaseResult>& results,
                   const std::vector<ProviderInfo>& providers);

// Writes `bytes` to `path` through `path`.tmp, fsync and rename.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace onyx::conformance
