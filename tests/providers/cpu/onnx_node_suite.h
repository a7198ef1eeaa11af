// onnx_node_suite.h: runs every ONNX backend node test whose (single) node
// is one of a list of ops, prints pass/fail/declined/skipped counts, and
// fails on any mismatch. A declined case is accepted only when the reason
// names something these kernels deliberately leave out (see kAllowedDeclines).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernel_harness.h"

namespace onyx::test {

// Reasons a kernel may give for declining an ONNX test case: element types
// that are not implemented (float8, 4-bit, string, complex).
inline bool allowed_decline(const std::string& reason) {
  static const char* const kAllowedDeclines[] = {"float8", "int4", "uint4", "float4",
                                                 "string", "complex"};
  for (const char* word : kAllowedDeclines)
    if (reason.find(word) != std::string::npos) return true;
  return false;
}

// Case name -> op type of every single-node case (parsed once).
inline const std::map<std::string, std::string>& onnx_case_ops() {
  static const std::map<std::string, std::string> ops = [] {
    std::map<std::string, std::string> out;
    for (const std::string& name : list_onnx_node_tests("test_")) {
      std::string op = onnx_node_test_op_type(name);
      if (!op.empty()) out[name] = op;
    }
    return out;
  }();
  return ops;
}

// `not_comparable`: cases (by name) whose expected output cannot be
// reproduced, with the reason; they are reported as skipped.
// Each case runs twice: as given, then with the output in the input's buffer
// wherever the kernel allows it, 3 threads and the input shapes hidden at
// kernel creation (as for a model without shape information).
inline void run_onnx_suite(const char* family, const std::set<std::string>& ops,
                           const std::map<std::string, std::string>& not_comparable = {}) {
  if (onnx_case_ops().empty()) GTEST_SKIP() << "no ONNX node tests in " << onnx_node_tests_dir();
  int pass = 0, fail = 0, declined = 0, skipped = 0;
  std::set<std::string> seen_ops;
  for (const auto& [name, op] : onnx_case_ops()) {
    if (!ops.count(op)) continue;
    seen_ops.insert(op);
    if (auto it = not_comparable.find(name); it != not_comparable.end()) {
      ++skipped;
      std::printf("  skipped  %s (%s): %s\n", name.c_str(), op.c_str(), it->second.c_str());
      continue;
    }
    OnnxCaseResult r = run_onnx_node_test(name);
    if (r.outcome == OnnxCaseResult::kPass) {
      OnnxCaseResult again = run_onnx_node_test(name, {}, {.threads = 3, .in_place = true, .hide_input_shapes = true});
      if (again.outcome != OnnxCaseResult::kPass) {
        r = again;
        r.message = "in place / 3 threads / shapes hidden: " + r.message;
      }
    }
    switch (r.outcome) {
      case OnnxCaseResult::kPass: ++pass; break;
      case OnnxCaseResult::kFail:
        ++fail;
        ADD_FAILURE() << name << " (" << op << "): " << r.message;
        break;
      case OnnxCaseResult::kDeclined:
        ++declined;
        std::printf("  declined %s (%s): %s\n", name.c_str(), op.c_str(), r.message.c_str());
        EXPECT_TRUE(allowed_decline(r.message)) << name << " was declined: " << r.message;
        break;
      case OnnxCaseResult::kSkipped:
        ++skipped;
        std::printf("  skipped  %s (%s): %s\n", name.c_str(), op.c_str(), r.message.c_str());
        break;
    }
  }
  std::printf("ONNX node tests, %s ops (%zu ops with cases): %d passed, %d failed, %d declined, "
              "%d skipped\n",
              family, seen_ops.size(), pass, fail, declined, skipped);
  EXPECT_GT(pass, 0);
}

}  // namespace onyx::test
