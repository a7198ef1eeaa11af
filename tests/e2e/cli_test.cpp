// cli_test.cpp: smoke tests of the built `onyx` command-line tool: real
// models in, files and exit codes out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "e2e_util.h"
#include "test_models.h"

namespace onyx::e2e {
namespace {

namespace fs = std::filesystem;
namespace tm = onyx::test_models;
using ::testing::HasSubstr;
using ::testing::Not;

// Same metric and tolerance as model_accuracy_test.cpp (see compare()).
constexpr double kTolerance = 1e-4;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override { tm::write_all_models(dir_.path()); }
  std::string model(const std::string& name) const { return quote(dir_ / name); }
  TempDir dir_;
};

TEST_F(Cli, RunCnnWritesLogitsMatchingReference) {
  const int64_t batch = 2;
  std::vector<float> x = tm::random_input(size_t(batch * 784), 21);
  write_tensor_pb(dir_ / "x.pb", "x", {batch, 1, 28, 28}, x);
  fs::path out_dir = dir_ / "out";
  CliResult r = run_cli("run " + model("cnn.onnx") + " --input x=" + quote(dir_ / "x.pb") + " --output-dir " +
                        quote(out_dir));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("logits"));
  EXPECT_THAT(r.output, HasSubstr("[2, 10]"));

  std::vector<int64_t> dims;
  std::string name;
  std::vector<float> logits = read_tensor_pb(out_dir / "logits.pb", &dims, &name);
  EXPECT_EQ(name, "logits");
  EXPECT_EQ(dims, (std::vector<int64_t>{batch, 10}));
  Comparison c = compare(logits, tm::cnn_reference(tm::make_cnn_weights(), x, batch));
  EXPECT_GT(c.scale, 0.1);
  EXPECT_LE(c.normalized_error, kTolerance) << "max |err| " << c.max_abs_error;
  // Written atomically: nothing but the output is left in the folder.
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(out_dir)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "logits.pb");
  }
  EXPECT_EQ(files, 1u);
}

TEST_F(Cli, RunMlpWithNpyInput) {
  const int64_t batch = 3;
  std::vector<float> x = tm::random_input(size_t(batch * 784), 22);
  write_npy_f32(dir_ / "x.npy", {batch, 784}, x);
  fs::path out_dir = dir_ / "out";
  CliResult r = run_cli("run " + model("mlp.onnx") + " --input x=" + quote(dir_ / "x.npy") + " --output-dir " +
                        quote(out_dir) + " --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<int64_t> dims;
  std::string name;
  std::vector<float> logits = read_tensor_pb(out_dir / "logits.pb", &dims, &name);
  EXPECT_EQ(dims, (std::vector<int64_t>{batch, 10}));
  Comparison c = compare(logits, tm::mlp_reference(tm::make_mlp_weights(), x, batch));
  EXPECT_LE(c.normalized_error, kTolerance) << "max |err| " << c.max_abs_error;
}

// --input files are read once as regular files: a FIFO (which the old reader
// opened with ifstream, waiting forever for a writer) is refused at once.
TEST_F(Cli, RunRefusesATensorFileThatIsAFifo) {
  const fs::path fifo = dir_ / "x.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CliResult r = run_cli("run " + model("mlp.onnx") + " --input x=" + quote(fifo));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tensor file: '" + fifo.string() + "' is not a regular file"));
}

TEST_F(Cli, RunWithoutInputsSaysItGeneratesThem) {
  CliResult r = run_cli("run " + model("mlp.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("input x not given"));
  EXPECT_THAT(r.output, HasSubstr("[1, 784]"));
  EXPECT_THAT(r.output, HasSubstr("logits  float32  [1, 10]"));
  EXPECT_THAT(r.output, HasSubstr("min "));
  // Deterministic: a second run prints the same values.
  CliResult again = run_cli("run " + model("mlp.onnx"));
  auto values = [](const std::string& out) { return out.substr(out.find("logits")); };
  EXPECT_EQ(values(r.output), values(again.output));
}

TEST_F(Cli, InfoMemoryPrintsTheRatio) {
  CliResult r = run_cli("info --memory " + model("mlp.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ai.onnx 17"));
  EXPECT_THAT(r.output, HasSubstr("[batch, 784]"));
  EXPECT_THAT(r.output, HasSubstr("Gemm"));
  EXPECT_THAT(r.output, HasSubstr("fc1"));
  EXPECT_THAT(r.output, HasSubstr("memory plan"));
  // "  cpu  <planned> <unit>  <bound> <unit>  <ratio>  ..."
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(\n  cpu\s+[0-9.]+ \S+\s+[0-9.]+ \S+\s+([0-9]+\.[0-9]+))")))
      << r.output;
  double ratio = std::stod(m[1]);
  EXPECT_GE(ratio, 1.0);
  EXPECT_LE(ratio, 1.10);
}

TEST_F(Cli, InfoJsonHasEveryPart) {
  CliResult r = run_cli("info --json --memory --shape x=4,784 " + model("mlp.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"ir_version\":8"));
  EXPECT_THAT(r.output, HasSubstr("\"ai.onnx\":17"));
  EXPECT_THAT(r.output, HasSubstr("\"Gemm\":3"));
  EXPECT_THAT(r.output, HasSubstr("\"partition\":{"));
  EXPECT_THAT(r.output, HasSubstr("\"memory\":["));
}

TEST_F(Cli, ProvidersListsCpu) {
  CliResult r = run_cli("providers");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\ncpu\s.*available)"))) << r.output;
  CliResult json = run_cli("providers --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_THAT(json.output, HasSubstr("\"name\":\"cpu\""));
  // Every device with its index, kind, stable id and free memory (ABI 1.3).
  EXPECT_TRUE(std::regex_search(json.output, std::regex(R"("index":0,"name":"[^"]*","vendor":"Onyx","kind":"cpu",)"
                                                        R"("stable_id":"cpu:0","memory_bytes":\d+,"free_memory_bytes":[1-9]\d*\})")))
      << json.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\n    device 0 \[cpu:0\]: .*free\))"))) << r.output;
}

TEST_F(Cli, DeviceOptionAndDevicePolicyChooseTheDevice) {
  const std::string run = "run " + model("mlp.onnx") + " --shape x=1,784 ";
  CliResult by_id = run_cli(run + "--provider cpu --provider-option device=cpu:0");
  EXPECT_EQ(by_id.exit_code, 0) << by_id.output;
  CliResult unknown = run_cli(run + "--provider cpu --provider-option device=3");
  EXPECT_NE(unknown.exit_code, 0) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("provider 'cpu' has no device 3 (1 devices"));
  EXPECT_THAT(unknown.output, HasSubstr("0: cpu:0, "));
  CliResult policy = run_cli(run + "--device-policy prefer-cpu");
  EXPECT_EQ(policy.exit_code, 0) << policy.output;
  CliResult both = run_cli(run + "--provider cpu --device-policy fastest");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_THAT(both.output, HasSubstr("--device-policy chooses the providers"));
  CliResult bad = run_cli(run + "--device-policy quickest");
  EXPECT_THAT(bad.output, HasSubstr("--device-policy must be prefer-gpu, prefer-cpu or fastest"));
}

TEST_F(Cli, BenchPrintsPercentiles) {
  CliResult r = run_cli("bench " + model("mlp.onnx") + " --warmup 1 --iterations 5 --shape x=4,784");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t p50 = r.output.find("p50"), p90 = r.output.find("p90"), p99 = r.output.find("p99");
  ASSERT_NE(p50, std::string::npos) << r.output;
  EXPECT_LT(p50, p90);
  EXPECT_LT(p90, p99);
  EXPECT_THAT(r.output, HasSubstr("throughput"));
  EXPECT_THAT(r.output, HasSubstr("[4, 784]"));
}

TEST_F(Cli, HelpAndVersion) {
  CliResult version = run_cli("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.output, HasSubstr("onyx 0.1.0"));
  CliResult help = run_cli("--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* command : {"providers", "info", "run", "bench"}) EXPECT_THAT(help.output, HasSubstr(command));
  CliResult run_help = run_cli("run --help");
  EXPECT_EQ(run_help.exit_code, 0);
  EXPECT_THAT(run_help.output, HasSubstr("--output-dir"));
}

// Every failure: exit status 1, "onyx: error: <what>", no crash.
void expect_error(const CliResult& r, const std::string& what) {
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("onyx: error:"));
  EXPECT_THAT(r.output, HasSubstr(what));
}

TEST_F(Cli, BadModelPath) {
  expect_error(run_cli("run " + quote(dir_ / "no_such_model.onnx")), "no_such_model.onnx");
}

TEST_F(Cli, TruncatedModel) { expect_error(run_cli("run " + model("truncated.onnx")), "not a valid ONNX model"); }

TEST_F(Cli, ExternalDataOutsideFolder) {
  expect_error(run_cli("run " + model("external_escape.onnx")), "outside the model's folder");
}

TEST_F(Cli, ExternalDataModelRuns) {
  CliResult r = run_cli("run " + model("external_data.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("y  float32  [2, 3]"));
}

TEST_F(Cli, UnknownInputName) {
  write_tensor_pb(dir_ / "x.pb", "x", {1, 784}, std::vector<float>(784, 0.5f));
  expect_error(run_cli("run " + model("mlp.onnx") + " --input nope=" + quote(dir_ / "x.pb")), "unknown input 'nope'");
}

TEST_F(Cli, WrongInputShape) {
  write_tensor_pb(dir_ / "x.pb", "x", {1, 783}, std::vector<float>(783, 0.5f));
  CliResult r = run_cli("run " + model("mlp.onnx") + " --input x=" + quote(dir_ / "x.pb"));
  expect_error(r, "has shape [1, 783]");
  EXPECT_THAT(r.output, HasSubstr("784"));
}

TEST_F(Cli, MissingInputFile) {
  expect_error(run_cli("run " + model("mlp.onnx") + " --input x=" + quote(dir_ / "absent.pb")), "absent.pb");
}

TEST_F(Cli, FortranOrderNpyRefused) {
  std::string header = "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 784), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + char(0) + header +
                      std::string(784 * 4, '\0');
  tm::write_bytes(bytes, dir_ / "f.npy");
  expect_error(run_cli("run " + model("mlp.onnx") + " --input x=" + quote(dir_ / "f.npy")), "Fortran");
}

TEST_F(Cli, UnknownCommandAndOption) {
  expect_error(run_cli("frobnicate"), "unknown command 'frobnicate'");
  expect_error(run_cli("run " + model("mlp.onnx") + " --bogus"), "unknown option '--bogus'");
  CliResult r = run_cli("run " + model("mlp.onnx") + " --threads");
  expect_error(r, "--threads needs a value");
  EXPECT_THAT(r.output, Not(HasSubstr("logits")));
}

// `onyx run` reads a SequenceProto input and writes a SequenceProto output,
// which it reads back in turn (ONNX's node test data as input).
TEST_F(Cli, RunReadsAndWritesSequenceProtoFiles) {
  const fs::path corpus = ONYX_CONFORMANCE_CORPUS;
  const fs::path insert = corpus / "test_sequence_insert_at_back", identity = corpus / "test_identity_sequence";
  if (!fs::exists(insert / "model.onnx") || !fs::exists(identity / "model.onnx"))
    GTEST_SKIP() << "the ONNX node tests are not at " << corpus;
  const fs::path data = insert / "test_data_set_0", out_dir = dir_ / "seq_out";
  CliResult r = run_cli("run " + quote(insert / "model.onnx") + " --input sequence=" + quote(data / "input_0.pb") +
                        " --input tensor=" + quote(data / "input_1.pb") + " --output-dir " + quote(out_dir));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("input sequence: sequence of 3 tensors"));
  EXPECT_THAT(r.output, HasSubstr("output_sequence  sequence of 4 tensors: int64 tensor [4], int64 tensor [3], "
                                  "int64 tensor [2], int64 tensor [3]"));
  ASSERT_TRUE(fs::exists(out_dir / "output_sequence.pb"));
  CliResult again = run_cli("run " + quote(insert / "model.onnx") + " --input sequence=" +
                            quote(out_dir / "output_sequence.pb") + " --input tensor=" + quote(data / "input_1.pb"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("output_sequence  sequence of 5 tensors"));
  // The identity model takes float32 sequences: an int64 one is refused, naming both.
  expect_error(run_cli("run " + quote(identity / "model.onnx") + " --input x=" + quote(out_dir / "output_sequence.pb")),
               "input 'x' is a sequence of 4 int64 tensors, the model expects element type float32");
  // A sequence input cannot be made up: the tool says how to give it.
  expect_error(run_cli("run " + quote(identity / "model.onnx")), "give it with --input x=FILE");
}

// String tensors in and out of `onyx run`: StringConcat on ONNX's UTF-8 test
// data, the output written as a TensorProto whose string_data the test reads
// back and compares with the expected output file.
TEST_F(Cli, RunReadsAndWritesStringTensors) {
  const fs::path concat = fs::path(ONYX_CONFORMANCE_CORPUS) / "test_string_concat_utf8";
  if (!fs::exists(concat / "model.onnx")) GTEST_SKIP() << "the ONNX node tests are not at " << ONYX_CONFORMANCE_CORPUS;
  const fs::path data = concat / "test_data_set_0", out_dir = dir_ / "strings_out";
  CliResult r = run_cli("run " + quote(concat / "model.onnx") + " --input x=" + quote(data / "input_0.pb") +
                        " --input y=" + quote(data / "input_1.pb") + " --output-dir " + quote(out_dir));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("string  [2]"));
  EXPECT_THAT(r.output, HasSubstr("first: [\""));
  onnx::TensorProto got, want;
  std::ifstream got_file(out_dir / "result.pb", std::ios::binary), want_file(data / "output_0.pb", std::ios::binary);
  ASSERT_TRUE(got.ParseFromIstream(&got_file)) << "no readable result.pb: " << r.output;
  ASSERT_TRUE(want.ParseFromIstream(&want_file));
  EXPECT_EQ(got.data_type(), onnx::TensorProto::STRING);
  ASSERT_EQ(got.string_data_size(), want.string_data_size());
  for (int k = 0; k < want.string_data_size(); ++k) EXPECT_EQ(got.string_data(k), want.string_data(k)) << k;
  // npy cannot hold strings; a made-up string input is refused with the way to give one.
  expect_error(run_cli("run " + quote(concat / "model.onnx") + " --input x=" + quote(data / "input_0.pb") +
                       " --input y=" + quote(data / "input_1.pb") + " --output-dir " + quote(out_dir) +
                       " --output-format npy"),
               "is a string tensor: only --output-format pb can hold it");
  expect_error(run_cli("run " + quote(concat / "model.onnx")), "is a string tensor; give it with --input");
  // A string that is not UTF-8 is named by element.
  onnx::TensorProto bad = want;
  bad.set_string_data(1, std::string("\xff\xfe", 2));
  std::ofstream(dir_ / "bad.pb", std::ios::binary) << bad.SerializeAsString();
  expect_error(run_cli("run " + quote(concat / "model.onnx") + " --input x=" + quote(dir_ / "bad.pb") +
                       " --input y=" + quote(data / "input_1.pb")),
               "UTF-8");
}

}  // namespace
}  // namespace onyx::e2e
