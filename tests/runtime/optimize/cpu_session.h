// cpu_session.h: what the optimizer tests that run a rewritten graph share:
// a session of a serialized model on the CPU provider alone.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ir/onnx_import.h"
#include "session/session.h"

namespace onyx::runtime {

// A session of `bytes` on the CPU provider (fallback: fail) at `level`; null,
// with the test failed, when the model or the session cannot be made.
inline std::unique_ptr<Session> cpu_session(ProviderRegistry& registry, const std::string& bytes,
                                            GraphOptimization level) {
  auto m = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  if (!m.ok()) return nullptr;
  SessionOptions options;
  options.providers.push_back({"cpu", {}});
  options.fallback = FallbackPolicy::kFail;
  options.graph_optimization = level;
  auto s = Session::create(registry, std::move(m).value(), options);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(s).value() : nullptr;
}

}  // namespace onyx::runtime
