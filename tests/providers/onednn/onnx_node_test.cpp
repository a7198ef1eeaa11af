// Every ONNX backend node test (/work/shared/onnx-backend-tests/node, or
// $ONYX_ONNX_NODE_TESTS) whose single node is an op the oneDNN provider
// implements, run through a real session (onednn first, cpu fallback). Each
// case the provider claims must match ONNX's expected outputs within the ONNX
// backend runner's tolerance (rtol 1e-3, atol 1e-7); declined cases are listed
// with the provider's reason and must still run (on the CPU provider).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "onednn_test_util.h"

namespace onyx::onednn_test {
namespace {

namespace fs = std::filesystem;

fs::path node_tests_dir() {
  const char* env = std::getenv("ONYX_ONNX_NODE_TESTS");
  return env ? fs::path(env) : fs::path("/work/shared/onnx-backend-tests/node");
}

template <typename Proto>
bool parse(const fs::path& path, Proto* proto) {
  std::ifstream in(path, std::ios::binary);
  return in && proto->ParseFromIstream(&in);
}

// The ops the provider implements (claims depend on attributes and types).
const std::set<std::string>& provider_ops() {
  static const std::set<std::string> ops = {
      "MatMul", "Gemm", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalMaxPool",
      "GlobalAveragePool", "BatchNormalization", "LayerNormalization", "Softmax", "LogSoftmax",
      "Relu", "LeakyRelu", "Elu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Abs", "Neg",
      "Reciprocal", "HardSwish", "Round", "Gelu", "Clip", "ReduceSum",
      "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
      "ReduceSumSquare", "Add", "Sub", "Mul", "Div"};
  return ops;
}

enum class Outcome { kPass, kFail, kDeclined, kSkipped };

struct CaseResult {
  Outcome outcome = Outcome::kFail;
  std::string message;
};

// Runs `model` with the case's inputs; fills `outputs`.
std::string run_case(onyx::Env& env, const onnx::ModelProto& model, const onyx::SessionOptions& options,
                     const std::vector<onnx::TensorProto>& inputs, std::vector<onyx::Tensor>* outputs,
                     std::string* report) {
  try {
    onyx::Session session = make_session(env, model, options);
    if (report) *report = session.partition_report();
    std::vector<onyx::Tensor> tensors;
    for (const auto& p : inputs) tensors.push_back(tensor_from_proto(p));
    std::vector<std::pair<std::string, const onyx::Tensor*>> feeds;
    for (size_t k = 0; k < inputs.size(); ++k) feeds.push_back({inputs[k].name(), &tensors[k]});
    *outputs = session.run(feeds);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

CaseResult run_node_case(onyx::Env& env, const fs::path& dir, const onnx::ModelProto& model) {
  std::vector<onnx::TensorProto> inputs, expected;
  fs::path data = dir / "test_data_set_0";
  for (int k = 0;; ++k) {
    onnx::TensorProto p;
    if (!fs::exists(data / ("input_" + std::to_string(k) + ".pb"))) break;
    if (!parse(data / ("input_" + std::to_string(k) + ".pb"), &p)) return {Outcome::kFail, "unreadable input"};
    if (p.name().empty()) p.set_name(model.graph().input(k).name());
    inputs.push_back(p);
  }
  for (int k = 0;; ++k) {
    onnx::TensorProto p;
    if (!fs::exists(data / ("output_" + std::to_string(k) + ".pb"))) break;
    if (!parse(data / ("output_" + std::to_string(k) + ".pb"), &p)) return {Outcome::kFail, "unreadable output"};
    expected.push_back(p);
  }
  std::vector<onyx::Tensor> outputs;
  std::string report;
  std::string error = run_case(env, model, onednn_then_cpu(), inputs, &outputs, &report);
  const std::string& node = model.graph().node(0).name();
  bool claimed = !report.empty() && node_device(report, node) == "onednn";
  if (!error.empty()) {
    // A case the runtime cannot run at all (e.g. an opset it does not know)
    // says nothing about this provider; one only this session fails is a failure.
    std::vector<onyx::Tensor> cpu_outputs;
    std::string cpu_error = run_case(env, model, cpu_only(), inputs, &cpu_outputs, nullptr);
    if (!cpu_error.empty()) return {Outcome::kSkipped, "the runtime cannot run it: " + cpu_error};
    return {Outcome::kFail, error};
  }
  if (!claimed) {
    size_t at = report.find("\"reason\":\"");
    return {Outcome::kDeclined, at == std::string::npos ? report : report.substr(at + 10, report.find('"', at + 10) - at - 10)};
  }
  if (outputs.size() != expected.size())
    return {Outcome::kFail, std::to_string(outputs.size()) + " outputs, expected " + std::to_string(expected.size())};
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::vector<int64_t> want(expected[k].dims().begin(), expected[k].dims().end());
    if (outputs[k].shape() != want) return {Outcome::kFail, "output " + std::to_string(k) + " has the wrong shape"};
    std::string diff = compare_values(tensor_values(outputs[k]), proto_values(expected[k]), 1e-3, 1e-7);
    if (!diff.empty()) return {Outcome::kFail, "output " + std::to_string(k) + ": " + diff};
  }
  return {Outcome::kPass, {}};
}

TEST(OnednnOnnxNodeTests, ClaimedCasesMatchOnnx) {
  if (!fs::is_directory(node_tests_dir())) GTEST_SKIP() << "no ONNX node tests in " << node_tests_dir();
  onyx::Env env;
  int pass = 0, fail = 0, declined = 0, skipped = 0;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(node_tests_dir())) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& dir : dirs) {
    onnx::ModelProto model;
    if (!parse(dir / "model.onnx", &model) || model.graph().node_size() != 1) continue;
    const std::string& op = model.graph().node(0).op_type();
    if (!provider_ops().count(op) || !model.graph().node(0).domain().empty()) continue;
    if (model.graph().node(0).name().empty()) model.mutable_graph()->mutable_node(0)->set_name("node");
    std::string name = dir.filename().string();
    CaseResult r = run_node_case(env, dir, model);
    switch (r.outcome) {
      case Outcome::kPass: ++pass; break;
      case Outcome::kFail:
        ++fail;
        ADD_FAILURE() << name << " (" << op << "): " << r.message;
        break;
      case Outcome::kDeclined:
        ++declined;
        std::printf("  declined %s (%s): %s\n", name.c_str(), op.c_str(), r.message.c_str());
        break;
      case Outcome::kSkipped:
        ++skipped;
        std::printf("  skipped  %s (%s): %s\n", name.c_str(), op.c_str(), r.message.c_str());
        break;
    }
  }
  std::printf("oneDNN provider, ONNX node tests of its ops: %d claimed and passed, %d failed, %d declined "
              "(ran on cpu), %d skipped\n",
              pass, fail, declined, skipped);
  EXPECT_GT(pass, 100);
}

}  // namespace
}  // namespace onyx::onednn_test
