// report.cpp: JSON and HTML report writers.
#include "report.h"

#include <onyx/util/atomic_file.h>
#include <onyx/util/json_writer.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace onyx::conformance {

namespace {

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// One matrix cell: the cases of one op on one provider.
struct Cell {
  int pass = 0, fail = 0, unsupported = 0, declined = 0, xfail = 0;
  // The cell's overall status: any failure makes it "fail".
  const char* status() const {
    if (fail) return "fail";
    if (xfail) return "expected_failure";
    if (pass) return unsupported || declined ? "partial" : "pass";
    return declined ? "declined" : "unsupported";
  }
};

// A provider's column label: the name its plugin reports, else as given.
std::string label(const ProviderInfo& p) { return p.name.empty() ? p.provider : p.name; }

}  // namespace

std::string results_json(const std::vector<CaseResult>& results, const std::vector<ProviderInfo>& providers) {
  // One record a line: tools and the suite's own tests read the cases line by line.
  util::JsonWriter j(2);
  j.begin_object().key("providers").begin_array();
  for (const ProviderInfo& p : providers) {
    j.begin_object().key("provider").value(p.provider).key("path").value(p.path).key("name").value(p.name);
    j.key("version").value(p.version).key("abi").value(p.abi).key("device").value(p.device);
    j.key("error").value(p.error).end_object();
  }
  j.end_array().key("cases").begin_array();
  for (const CaseResult& r : results) {
    j.begin_object().key("provider").value(r.provider).key("suite").value(r.suite).key("case").value(r.name);
    j.key("op").value(r.op).key("status").value(outcome_name(r.outcome)).key("error").value(r.error);
    j.key("max_error").value(r.max_error, 6).key("seconds").value(r.seconds, 6).end_object();
  }
  Totals t = count(results);
  j.end_array().key("totals").begin_object().key("passed").value(t.passed).key("failed").value(t.failures());
  j.key("skipped").value(t.skipped()).key("declined").value(t.declined).key("unsupported").value(t.unsupported);
  j.key("expected_failures").value(t.expected_failures).key("unexpected_passes").value(t.unexpected_passes);
  j.end_object().end_object();
  return j.str() + "\n";
}

namespace {

void add(Cell& cell, Outcome outcome) {
  switch (outcome) {
    case Outcome::kPassed: ++cell.pass; break;
    case Outcome::kFailed: case Outcome::kUnexpectedPass: ++cell.fail; break;
    case Outcome::kUnsupported: ++cell.unsupported; break;
    case Outcome::kDeclined: ++cell.declined; break;
    case Outcome::kExpectedFailure: ++cell.xfail; break;
  }
}

std::string cell_html(const Cell& c, const std::string& title) {
  const int total = c.pass + c.fail + c.unsupported + c.declined + c.xfail;
  return std::string("<td class=\"") + c.status() + "\" data-status=\"" + c.status() + "\"" +
         (title.empty() ? "" : " title=\"" + html_escape(title) + "\"") + ">" + std::to_string(c.pass) + "/" +
         std::to_string(total) + "</td>";
}

std::string totals_table(const std::vector<CaseResult>& results, const std::vector<ProviderInfo>& providers) {
  std::string h =
      "<table id=\"totals\"><tr><th>provider</th><th>plugin</th><th>version</th><th>ABI</th><th>device</th>"
      "<th>passed</th><th>failed</th><th>declined</th><th>unsupported</th><th>expected failures</th></tr>\n";
  for (const ProviderInfo& info : providers) {
    std::vector<CaseResult> mine;
    for (const CaseResult& r : results)
      if (r.provider == info.provider) mine.push_back(r);
    Totals t = count(mine);
    h += "<tr><td>" + html_escape(label(info)) + "</td><td>" +
         html_escape(info.error.empty() ? info.path : info.error) + "</td><td>" + html_escape(info.version) +
         "</td><td>" + html_escape(info.abi) + "</td><td>" + html_escape(info.device) + "</td><td>" +
         std::to_string(t.passed) + "</td><td>" + std::to_string(t.failures()) + "</td><td>" +
         std::to_string(t.declined) + "</td><td>" + std::to_string(t.unsupported) + "</td><td>" + std::to_string(t.expected_failures) + "</td></tr>\n";
  }
  return h + "</table>\n";
}

// The abi suite: one row per case, one column per provider.
std::string abi_table(const std::vector<CaseResult>& results, const std::vector<ProviderInfo>& providers) {
  std::map<std::string, std::map<std::string, const CaseResult*>> rows;
  for (const CaseResult& r : results)
    if (r.suite == "abi") rows[r.name][r.provider] = &r;
  if (rows.empty()) return "";
  std::string h = "<h2>ABI</h2>\n<table id=\"abi\"><thead><tr><th>check</th>";
  for (const ProviderInfo& p : providers) h += "<th class=\"provider\">" + html_escape(label(p)) + "</th>";
  h += "</tr></thead><tbody>\n";
  for (const auto& [name, row] : rows) {
    h += "<tr><th class=\"check\">" + html_escape(name) + "</th>";
    for (const ProviderInfo& p : providers) {
      auto it = row.find(p.provider);
      if (it == row.end()) {
        h += "<td></td>";
        continue;
      }
      Cell c;
      add(c, it->second->outcome);
      h += cell_html(c, it->second->error);
    }
    h += "</tr>\n";
  }
  return h + "</tbody></table>\n";
}

// Every other suite: one row per op, one column per provider and suite.
std::string op_matrix(const std::vector<CaseResult>& results, const std::vector<ProviderInfo>& providers) {
  std::vector<std::string> suites;
  std::map<std::string, std::map<std::string, Cell>> matrix;  // op -> provider \t suite -> cell
  for (const CaseResult& r : results) {
    if (r.suite == "abi") continue;
    if (std::find(suites.begin(), suites.end(), r.suite) == suites.end()) suites.push_back(r.suite);
    add(matrix[r.op.empty() ? "(unknown op)" : r.op][r.provider + "\t" + r.suite], r.outcome);
  }
  if (matrix.empty()) return "";
  std::string h =
      "<h2>Operators</h2>\n<p>Each cell: cases passed / cases for that op. Colours: "
      "<span class=\"pass\">pass</span> <span class=\"partial\">pass, some declined or unsupported</span> "
      "<span class=\"fail\">fail</span> <span class=\"expected_failure\">expected failure</span> "
      "<span class=\"declined\">declined by the provider</span> "
      "<span class=\"unsupported\">unsupported</span>.</p>\n<table id=\"matrix\"><thead><tr><th>op</th>";
  for (const ProviderInfo& p : providers)
    for (const std::string& suite : suites)
      h += "<th class=\"provider\">" + html_escape(label(p)) + (suites.size() > 1 ? " " + suite : "") + "</th>";
  h += "</tr></thead><tbody>\n";
  for (const auto& [op, row] : matrix) {
    h += "<tr><th class=\"op\">" + html_escape(op) + "</th>";
    for (const ProviderInfo& p : providers) {
      for (const std::string& suite : suites) {
        auto it = row.find(p.provider + "\t" + suite);
        h += it == row.end() ? std::string("<td></td>") : cell_html(it->second, "");
      }
    }
    h += "</tr>\n";
  }
  return h + "</tbody></table>\n";
}

}  // namespace

std::string results_html(const std::vector<CaseResult>& results, const std::vector<ProviderInfo>& providers) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>Onyx conformance report</title>\n<style>\n"
      "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\n"
      "td,th{border:1px solid #999;padding:2px 8px;font-size:13px}th{background:#eee}\n"
      ".pass{background:#b7e4b0}.fail{background:#f4a3a3}.unsupported{background:#ddd}\n"
      ".declined{background:#c9d7ee}\n"
      ".expected_failure{background:#f7d98b}.partial{background:#d8ecb0}\n"
      "</style></head><body>\n<h1>Onyx conformance report</h1>\n";
  h += totals_table(results, providers);
  h += abi_table(results, providers);
  h += op_matrix(results, providers);
  h += "<h2>Cases that did not pass</h2>\n<table id=\"cases\"><tr><th>provider</th>"
       "<th>suite</th><th>case</th><th>status</th><th>error</th></tr>\n";
  for (const CaseResult& r : results) {
    if (r.outcome == Outcome::kPassed) continue;
    h += std::string("<tr class=\"") + outcome_name(r.outcome) + "\"><td>" + html_escape(r.provider) +
         "</td><td>" + html_escape(r.suite) + "</td><td>" + html_escape(r.name) + "</td><td>" +
         outcome_name(r.outcome) + "</td><td>" + html_escape(r.error.substr(0, 400)) + "</td></tr>\n";
  }
  h += "</table>\n</body></html>\n";
  return h;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  util::WriteResult written = util::write_file_atomically(path, bytes);
  if (!written.ok()) throw std::runtime_error(written.message());
}

void write_reports(const std::string& dir, const std::vector<CaseResult>& results,
                   const std::vector<ProviderInfo>& providers) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create report folder '" + dir + "': " + ec.message());
  write_file_atomically(dir + "/report.json", results_json(results, providers));
  write_file_atomically(dir + "/report.html", results_html(results, providers));
}

}  // namespace onyx::conformance
