// conformance_test.cpp: the runner must fail where it should. It runs the
// real onyx-conformance binary on deliberately broken plugins
// (plugins/broken_plugin.cpp) and on the CPU provider, and reads the JSON
// report it writes; the HTML report is rendered by headless Chromium.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct RunnerOutput {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  std::string json;    // report.json, when --report was given
  std::string report_dir;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("onyx_conformance_test_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// Runs onyx-conformance with `args` (already shell-quoted) and a report folder.
RunnerOutput run_runner(const std::string& args, const std::string& name) {
  RunnerOutput r;
  r.report_dir = temp_dir("report_" + name);
  const std::string command = std::string(ONYX_CONFORMANCE_BIN) + " --corpus " ONYX_CONFORMANCE_CORPUS +
                              " --report " + r.report_dir + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.json = read_file(r.report_dir + "/report.json");
  return r;
}

// The report line of one case (the JSON writer puts each case on one line).
std::string case_line(const RunnerOutput& r, const std::string& suite, const std::string& name) {
  std::istringstream lines(r.json);
  std::string line;
  const std::string key = "\"suite\": \"" + suite + "\", \"case\": \"" + name + "\"";
  while (std::getline(lines, line))
    if (line.find(key) != std::string::npos) return line;
  return "";
}

std::string status_of(const RunnerOutput& r, const std::string& suite, const std::string& name) {
  const std::string line = case_line(r, suite, name);
  const std::string key = "\"status\": \"";
  size_t at = line.find(key);
  if (at == std::string::npos) return "(missing)";
  at += key.size();
  return line.substr(at, line.find('"', at) - at);
}

std::string last_line(const std::string& output) {
  std::string s = output;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

const std::string kBrokenOps = "--filter '^test_(add|relu|sigmoid|neg|abs)$' --timeout 3";

}  // namespace

TEST(BrokenPlugin, NodeSuiteCatchesWrongResultsFalseClaimsCrashesAndHangs) {
  RunnerOutput r = run_runner("--provider " ONYX_BROKEN_PLUGIN " --suite onnx-node " + kBrokenOps, "node");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(status_of(r, "onnx-node", "test_add"), "pass") << r.output;
  EXPECT_EQ(status_of(r, "onnx-node", "test_relu"), "fail");
  EXPECT_NE(case_line(r, "onnx-node", "test_relu").find("elements differ"), std::string::npos);
  EXPECT_EQ(status_of(r, "onnx-node", "test_sigmoid"), "fail");
  EXPECT_NE(case_line(r, "onnx-node", "test_sigmoid").find("kernel creation failed"), std::string::npos);
  EXPECT_EQ(status_of(r, "onnx-node", "test_neg"), "fail");
  EXPECT_NE(case_line(r, "onnx-node", "test_neg").find("signal 11"), std::string::npos);
  EXPECT_EQ(status_of(r, "onnx-node", "test_abs"), "fail");
  EXPECT_NE(case_line(r, "onnx-node", "test_abs").find("timed out"), std::string::npos);
  EXPECT_EQ(last_line(r.output), "1 passed, 4 failed, 0 skipped");
}

TEST(BrokenPlugin, ClaimsSuiteCatchesTheFalseClaimAndTheWrongKernel) {
  RunnerOutput r = run_runner("--provider " ONYX_BROKEN_PLUGIN " --suite claims " + kBrokenOps, "claims");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(status_of(r, "claims", "test_add"), "pass") << r.output;
  EXPECT_NE(case_line(r, "claims", "test_sigmoid").find("false claim"), std::string::npos) << r.output;
  EXPECT_NE(case_line(r, "claims", "test_relu").find("claimed, but output"), std::string::npos);
  EXPECT_EQ(status_of(r, "claims", "test_neg"), "fail");
  EXPECT_EQ(status_of(r, "claims", "test_abs"), "fail");
}

TEST(BrokenPlugin, AbiSuiteCatchesWrongResultsUnderConcurrency) {
  RunnerOutput r = run_runner("--provider " ONYX_BROKEN_PLUGIN " --suite abi", "abi");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(status_of(r, "abi", "load_and_entry"), "pass") << r.output;
  EXPECT_EQ(status_of(r, "abi", "allocator_round_trip"), "pass");
  EXPECT_EQ(status_of(r, "abi", "data_transfer_round_trip"), "pass");
  EXPECT_EQ(status_of(r, "abi", "thread_safety"), "fail");
  EXPECT_NE(case_line(r, "abi", "thread_safety").find("Relu kernel computed a wrong value"), std::string::npos);
}

TEST(BrokenPlugin, AbiSuiteCatchesBadStructSizes) {
  RunnerOutput r = run_runner("--provider " ONYX_BADSIZE_PLUGIN " --suite abi", "badsize");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(status_of(r, "abi", "load_and_entry"), "pass") << r.output;
  EXPECT_EQ(status_of(r, "abi", "provider_table"), "fail");
  EXPECT_NE(case_line(r, "abi", "provider_table").find("lacks required functions: get_capability"),
            std::string::npos);
  EXPECT_EQ(status_of(r, "abi", "older_host_structs"), "fail");
  EXPECT_NE(case_line(r, "abi", "older_host_structs").find("past struct_size"), std::string::npos);
  EXPECT_EQ(status_of(r, "abi", "newer_host_structs"), "fail");
}

TEST(AbiSuite, RefusesAnotherMajorVersionNamingBothRanges) {
  RunnerOutput r = run_runner("--provider " ONYX_TEST_PLUGIN_DIR "/libonyx_provider_major_two.so --suite abi "
                              "--filter load_and_entry", "major_two");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(case_line(r, "abi", "load_and_entry").find("incompatible: the plugin speaks ABI 2.0-2.1, this host 1.0-1.3"),
            std::string::npos) << r.output;
}

TEST(AbiSuite, NewerMinorPluginWithAGrownTablePasses) {
  RunnerOutput r = run_runner("--provider " ONYX_TEST_PLUGIN_DIR "/libonyx_provider_newer_minor.so --suite abi",
                              "newer_minor");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(last_line(r.output), "10 passed, 0 failed, 0 skipped");
}

TEST(Runner, UnavailableDeviceMakesCasesUnsupportedNotFailed) {
  RunnerOutput r = run_runner("--provider " ONYX_TEST_PLUGIN_DIR "/libonyx_provider_ghost.so "
                              "--suite abi,onnx-node,claims --filter '^(test_relu|allocator_round_trip)$'",
                              "ghost");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const auto& [suite, name] : {std::pair<std::string, std::string>{"abi", "allocator_round_trip"},
                                    {"onnx-node", "test_relu"},
                                    {"claims", "test_relu"}}) {
    EXPECT_EQ(status_of(r, suite, name), "unsupported") << suite;
    EXPECT_NE(case_line(r, suite, name).find("ghost accelerator not found"), std::string::npos) << r.json;
  }
}

// An honest decline (the broken plugin's Add refuses broadcasting, with a
// reason) is reported as declined in both suites, never as a failure; only
// --strict-declines (the reference provider's mode) requires it to be listed.
TEST(Runner, HonestDeclineIsDeclinedNotFailed) {
  const std::string args = "--provider " ONYX_BROKEN_PLUGIN " --suite onnx-node,claims --filter '^test_add_bcast$'";
  RunnerOutput r = run_runner(args, "declined");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* suite : {"onnx-node", "claims"}) {
    EXPECT_EQ(status_of(r, suite, "test_add_bcast"), "declined") << suite << "\n" << r.output;
    EXPECT_NE(case_line(r, suite, "test_add_bcast").find("broken test plugin: no broadcasting"), std::string::npos)
        << r.json;
  }
  EXPECT_NE(r.json.find("\"declined\": 2"), std::string::npos) << r.json;
  EXPECT_EQ(last_line(r.output), "0 passed, 0 failed, 2 skipped");

  RunnerOutput strict = run_runner(args + " --strict-declines", "declined_strict");
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
  EXPECT_EQ(status_of(strict, "onnx-node", "test_add_bcast"), "fail");
  EXPECT_EQ(status_of(strict, "claims", "test_add_bcast"), "declined");

  const std::string list = temp_dir("declined_list") + "/conformance.txt";
  std::ofstream(list) << "xfail onnx-node test_add_bcast broadcasting is not implemented yet\n";
  RunnerOutput listed = run_runner(args + " --strict-declines --expectations " + list, "declined_listed");
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_EQ(status_of(listed, "onnx-node", "test_add_bcast"), "expected_failure");
}

TEST(Expectations, ListedFailuresAreSkippedAndListedPassesFail) {
  const std::string dir = temp_dir("expectations");
  const std::string list = dir + "/conformance.txt";
  std::ofstream(list) << "# test list\n"
                         "xfail onnx-node test_relu negatives pass through on purpose\n"
                         "unsupported onnx-node test_n* crashes on purpose\n"
                         "xfail onnx-node test_add listed although it passes\n";
  RunnerOutput r = run_runner("--provider " ONYX_BROKEN_PLUGIN " --suite onnx-node --filter '^test_(add|relu|neg)$'"
                     " --expectations " + list, "expectations");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(status_of(r, "onnx-node", "test_relu"), "expected_failure") << r.output;
  EXPECT_EQ(status_of(r, "onnx-node", "test_neg"), "unsupported");
  EXPECT_EQ(status_of(r, "onnx-node", "test_add"), "unexpected_pass");
  EXPECT_NE(r.output.find("conformance.txt:4 but passes: remove it from the list"), std::string::npos) << r.output;
  EXPECT_EQ(last_line(r.output), "0 passed, 1 failed, 2 skipped");

  std::ofstream(list) << "xfail onnx-node test_relu negatives pass through on purpose\n"
                         "unsupported onnx-node test_n* crashes on purpose\n";
  RunnerOutput fixed = run_runner("--provider " ONYX_BROKEN_PLUGIN " --suite onnx-node --filter '^test_(add|relu|neg)$'"
                         " --expectations " + list, "expectations2");
  EXPECT_EQ(fixed.exit_code, 0) << fixed.output;
  EXPECT_EQ(last_line(fixed.output), "1 passed, 0 failed, 2 skipped");
}

TEST(Expectations, RegeneratedListCoversEveryCaseThatDoesNotPass) {
  const std::string dir = temp_dir("regenerate");
  const std::string list = dir + "/new.txt";
  RunnerOutput r = run_runner("--provider " ONYX_BROKEN_PLUGIN " --suite onnx-node " + kBrokenOps +
                         " --write-expectations " + list, "regenerate");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  RunnerOutput again = run_runner("--provider " ONYX_BROKEN_PLUGIN " --suite onnx-node " + kBrokenOps +
                             " --expectations " + list, "regenerate2");
  EXPECT_EQ(again.exit_code, 0) << again.output << read_file(list);
  EXPECT_EQ(last_line(again.output), "1 passed, 0 failed, 4 skipped");
}

TEST(Expectations, MalformedLineIsRefusedWithItsPlace) {
  const std::string dir = temp_dir("malformed");
  const std::string list = dir + "/bad.txt";
  std::ofstream(list) << "xfail onnx-node test_relu\n";  // no reason
  RunnerOutput r = run_runner("--provider cpu --suite onnx-node --filter '^test_relu$' --expectations " + list, "malformed");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("bad.txt:1: 'test_relu' has no reason"), std::string::npos) << r.output;
}

// Sequences, optionals and string tensors are fed through OnyxValue and
// compared item by item (onyx_session_run_values).
TEST(Runner, SequenceOptionalAndStringValuesAreFedAndCompared) {
  RunnerOutput r = run_runner("--provider cpu --suite onnx-node --filter "
                              "'^test_(sequence_insert_at_back|optional_get_element_optional_sequence|string_concat)$'",
                              "sequence");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* name : {"test_sequence_insert_at_back", "test_optional_get_element_optional_sequence",
                           "test_string_concat"})
    EXPECT_EQ(status_of(r, "onnx-node", name), "pass") << name << "\n" << r.output;
}

TEST(Runner, MissingProviderAndCorpusAreClearErrors) {
  RunnerOutput r = run_runner("--provider no_such_provider --suite abi", "noprovider");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("libonyx_provider_no_such_provider.so"), std::string::npos) << r.output;
  RunnerOutput c = run_runner("--provider cpu --suite onnx-node --corpus /nonexistent/corpus", "nocorpus");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.output.find("'/nonexistent/corpus' does not exist"), std::string::npos) << c.output;
}

TEST(Report, HtmlMatrixRendersInHeadlessChromium) {
  RunnerOutput r = run_runner("--provider " ONYX_BROKEN_PLUGIN " --provider cpu --suite abi,onnx-node "
                     "--filter '^(test_(add|relu)|thread_safety)$'", "html");
  ASSERT_TRUE(fs::exists(r.report_dir + "/report.html")) << r.output;
  const std::string browser = "/usr/bin/chromium-headless-shell";
  ASSERT_TRUE(fs::exists(browser)) << "headless Chromium is missing: run scripts/install-deps.sh";
  const std::string dom_file = r.report_dir + "/dom.html";
  const std::string command = browser + " --no-sandbox --disable-gpu --dump-dom file://" + r.report_dir +
                              "/report.html > " + dom_file + " 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const std::string dom = read_file(dom_file);
  // The DOM as the browser built it: a matrix with one column per provider
  // and the cells' verdicts.
  EXPECT_NE(dom.find("<table id=\"matrix\">"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("<th class=\"provider\">conformance_broken</th><th class=\"provider\">cpu</th>"),
            std::string::npos);
  EXPECT_NE(dom.find("<th class=\"op\">Relu</th><td class=\"fail\" data-status=\"fail\">0/1</td>"
                     "<td class=\"pass\" data-status=\"pass\">1/1</td>"),
            std::string::npos)
      << dom.substr(0, 4000);
  EXPECT_NE(dom.find("<th class=\"op\">Add</th><td class=\"pass\" data-status=\"pass\">1/1</td>"),
            std::string::npos);
  // The ABI checks have their own table.
  EXPECT_NE(dom.find("<table id=\"abi\">"), std::string::npos);
  EXPECT_NE(dom.find("<th class=\"check\">thread_safety</th><td class=\"fail\" data-status=\"fail\""),
            std::string::npos);
}
