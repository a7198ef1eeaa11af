// Sweep over the ONNX backend node tests: every model imports (with shape
// inference) without crashing or contradicting its declared shapes, and
// wherever our inference produces a fully known output shape it equals the
// shape (and type) of the expected output_K.pb. The test models declare
// their output shapes, so the comparison first forgets every node output's
// declared type: what remains is inferred. Inference runs twice: from the
// declared input shapes (import time) and from the shapes of the test's
// actual inputs (what a session's plan does). A third pass binds the test's
// input values as constants: that exercises the rules that read an input's
// value (Reshape's shape, Slice's starts, ...) and constant folding, whose
// folded values must equal the expected outputs exactly (integer math is
// exact, and float32 +-*/ computed in double then rounded equals float32
// math, since double has more than 2*24+2 mantissa bits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "ir/onnx_import.h"
#include "ir/shape_inference.h"
#include "ir/tensor_proto.h"

namespace onyx::runtime::ir {
namespace {

namespace fs = std::filesystem;

std::string corpus_dir() {
  if (const char* env = std::getenv("ONYX_NODE_TESTS_DIR")) return env;
#ifdef ONYX_NODE_TESTS_DIR
  return ONYX_NODE_TESTS_DIR;
#else
  return "";
#endif
}

// Models whose import legitimately fails, with the reason: features outside
// what Onyx supports (checked against the error text).
const std::map<std::string, std::string>& expected_import_failures() {
  static const std::map<std::string, std::string> m = {};
  return m;
}

struct Tally {
  int models = 0, imported = 0, outputs = 0;
  int agree = 0, disagree = 0, unknown = 0;
  int folded = 0;  // outputs whose value was folded (and checked)
  std::vector<std::string> failures;
  std::vector<std::string> disagreements;
  // "domain:op@opset" of the producers of outputs left unknown: count, a test.
  std::map<std::string, std::pair<int, std::string>> unknown_by_op;
};

// Compares every known graph output with the expected tensors of `dir`.
void compare_outputs(const Graph& g, const fs::path& dir, const std::string& name, const char* pass,
                     Tally& tally) {
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    fs::path expected_file = dir / "test_data_set_0" / ("output_" + std::to_string(k) + ".pb");
    if (!fs::exists(expected_file)) continue;
    auto expected = load_tensor_file(expected_file.string());
    if (!expected.ok()) continue;  // a sequence or optional, not a tensor
    ++tally.outputs;
    const Value& v = g.values[size_t(g.outputs[k])];
    if (!v.shape_known()) {
      ++tally.unknown;
      const Node* producer = v.producer >= 0 ? &g.nodes[size_t(v.producer)] : nullptr;
      auto& entry = tally.unknown_by_op[producer ? producer->domain + ":" + producer->op_type + "@" +
                                                       std::to_string(g.opset(producer->domain))
                                                 : "(no producer)"];
      if (entry.first++ == 0) entry.second = name;
      continue;
    }
    if (v.constant && v.producer >= 0) {
      ++tally.folded;
      const Tensor& got = *v.constant;
      bool same = got.dtype() == expected->dtype() && got.shape() == expected->shape() &&
                  got.bytes() == expected->bytes();
      if (same && got.dtype() == ONYX_DTYPE_FLOAT32) {
        for (int64_t e = 0; e < got.size(); ++e) {
          float a = got.data_as<float>()[e], b = expected->data_as<float>()[e];
          same = same && (a == b || (std::isnan(a) && std::isnan(b)));
        }
      } else if (same && got.dtype() == ONYX_DTYPE_FLOAT64) {
        for (int64_t e = 0; e < got.size(); ++e) {
          double a = got.data_as<double>()[e], b = expected->data_as<double>()[e];
          same = same && (a == b || (std::isnan(a) && std::isnan(b)));
        }
      } else if (same) {
        same = std::memcmp(got.data(), expected->data(), got.bytes()) == 0;
      }
      if (!same) {
        ++tally.disagree;
        tally.disagreements.push_back(name + " [" + pass + "] output '" + v.name + "': folded value differs");
        continue;
      }
    }
    const bool same_shape = v.dims == expected->shape();
    const bool same_type = v.dtype == ONYX_DTYPE_UNDEFINED || v.dtype == expected->dtype();
    if (same_shape && same_type) {
      ++tally.agree;
    } else {
      ++tally.disagree;
      tally.disagreements.push_back(name + " [" + pass + "] output '" + v.name + "': inferred " +
                                    dtype_name(v.dtype) + " " + shape_string(v.dims) + ", expected " +
                                    dtype_name(expected->dtype()) + " " + shape_string(expected->shape()));
    }
  }
}

// A few models from the corpus, checked in detail.
TEST(NodeCorpus, SelectedModels) {
  const fs::path root = corpus_dir();
  if (root.empty() || !fs::is_directory(root))
    GTEST_SKIP() << "ONNX node tests not found at '" << root << "' (set ONYX_NODE_TESTS_DIR)";
  auto load = [&](const std::string& test) { return load_model((root / test / "model.onnx").string()); };

  auto conv = load("test_conv_with_strides_and_asymmetric_padding");
  ASSERT_TRUE(conv.ok()) << conv.status().to_string();
  const Node& c = conv->graph->nodes.at(0);
  EXPECT_EQ(c.op_type, "Conv");
  EXPECT_EQ(c.attr("pads")->ints, std::vector<int64_t>({1, 0, 1, 0}));
  EXPECT_EQ(c.attr("strides")->ints, std::vector<int64_t>({2, 2}));
  EXPECT_EQ(conv->base_dir, (root / "test_conv_with_strides_and_asymmetric_padding").string());
  EXPECT_EQ(conv->graph->values[size_t(conv->graph->outputs[0])].dims, Shape({1, 1, 4, 2}));

  auto branch = load("test_if");
  ASSERT_TRUE(branch.ok()) << branch.status().to_string();
  const Node& n = branch->graph->nodes.at(0);
  ASSERT_TRUE(n.attr("then_branch") && n.attr("then_branch")->g);
  EXPECT_EQ(n.attr("then_branch")->g->nodes.at(0).op_type, "Constant");
  EXPECT_EQ(n.attr("then_branch")->g->opsets, branch->graph->opsets);

  // An expanded function: Shape/Size/Slice/... chains fold to constants.
  auto ln = load("test_layer_normalization_4d_axis1_expanded");
  ASSERT_TRUE(ln.ok()) << ln.status().to_string();
  int folded = 0;
  for (const Value& v : ln->graph->values) folded += v.constant && v.producer >= 0;
  EXPECT_GT(folded, 5);

  auto ceil = load("test_maxpool_2d_ceil_output_size_reduce_by_one");
  ASSERT_TRUE(ceil.ok()) << ceil.status().to_string();
  auto expected = load_tensor_file((root / "test_maxpool_2d_ceil_output_size_reduce_by_one" /
                                    "test_data_set_0" / "output_0.pb").string());
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  Graph stripped = *ceil->graph;
  for (Value& v : stripped.values)
    if (v.producer >= 0) v.rank = -1, v.dims.clear();
  ASSERT_TRUE(infer_shapes(stripped).ok());
  EXPECT_EQ(stripped.values[size_t(stripped.outputs[0])].dims, expected->shape());
}

TEST(NodeCorpus, ImportsAndAgreesWithExpectedOutputShapes) {
  const std::string root = corpus_dir();
  if (root.empty() || !fs::is_directory(root))
    GTEST_SKIP() << "ONNX node tests not found at '" << root << "' (set ONYX_NODE_TESTS_DIR)";
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root))
    if (fs::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  Tally declared, actual, constants;
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    ++declared.models;
    auto model = load_model((dir / "model.onnx").string());
    if (!model.ok()) {
      declared.failures.push_back(name + ": " + model.status().to_string());
      continue;
    }
    ++declared.imported;
    Graph stripped = *model->graph;
    for (Value& v : stripped.values)
      if (v.producer >= 0) v.dtype = ONYX_DTYPE_UNDEFINED, v.rank = -1, v.dims.clear(), v.constant.reset();
    Graph g = stripped;
    if (Status st = infer_shapes(g); !st.ok()) {
      declared.failures.push_back(name + " (stripped): " + st.to_string());
      continue;
    }
    compare_outputs(g, dir, name, "declared", declared);

    // Again with the test inputs' actual shapes.
    g = stripped;
    std::map<std::string, Shape> shapes;
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      auto input = load_tensor_file((dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb")).string());
      if (input.ok()) shapes[g.values[size_t(g.inputs[k])].name] = input->shape();
    }
    Status st = infer_shapes(g, shapes);
    ++actual.models;
    if (!st.ok()) {
      actual.failures.push_back(name + " (actual input shapes): " + st.to_string());
      continue;
    }
    ++actual.imported;
    compare_outputs(g, dir, name, "actual", actual);

    // Again with the inputs' values as constants.
    g = stripped;
    bool all_inputs = true;
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      const int v = g.inputs[k];
      auto input = load_tensor_file((dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb")).string());
      if (!input.ok()) {
        all_inputs = false;
        break;
      }
      Value& value = g.values[size_t(v)];
      value.is_graph_input = false;
      value.constant = *input;
      value.dtype = input->dtype();
      value.rank = int32_t(input->shape().size());
      value.dims = input->shape();
    }
    if (!all_inputs) continue;
    g.inputs.clear();
    ++constants.models;
    if (Status cst = infer_shapes(g); !cst.ok()) {
      constants.failures.push_back(name + " (constant inputs): " + cst.to_string());
      continue;
    }
    ++constants.imported;
    compare_outputs(g, dir, name, "constants", constants);
  }
  for (const Tally* t : {&declared, &actual, &constants}) {
    std::cout << (t == &declared ? "[declared shapes] " : t == &actual ? "[actual input shapes] " : "[constant inputs] ")
              << t->models
              << " models, " << t->imported << " imported/inferred, " << t->outputs
              << " tensor outputs: " << t->agree << " agree, " << t->disagree << " disagree, "
              << t->unknown << " not fully inferred; " << t->folded << " folded values equal\n";
    for (const std::string& f : t->failures) std::cout << "  FAILED " << f << "\n";
    for (const std::string& d : t->disagreements) std::cout << "  DISAGREE " << d << "\n";
    std::cout << "  not fully inferred, by producer:";
    for (const auto& [op, entry] : t->unknown_by_op)
      std::cout << " " << op << "=" << entry.first << "(" << entry.second << ")";
    std::cout << "\n";
  }
  EXPECT_EQ(declared.disagree, 0);
  EXPECT_EQ(actual.disagree, 0);
  EXPECT_EQ(constants.disagree, 0);
  std::set<std::string> unexpected;
  for (const std::string& f : declared.failures) {
    const std::string test = f.substr(0, f.find(':'));
    if (!expected_import_failures().count(test)) unexpected.insert(f);
  }
  for (const std::string& f : actual.failures) unexpected.insert(f);
  for (const std::string& f : constants.failures) unexpected.insert(f);
  EXPECT_TRUE(unexpected.empty()) << unexpected.size() << " unexpected failures (listed above)";
}

}  // namespace
}  // namespace onyx::runtime::ir
