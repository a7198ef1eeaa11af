// model_loader_fuzzer.cpp: libFuzzer harness for the ONNX model loader:
// protobuf parse, import (names, attributes, subgraphs, initializers) and
// shape inference with constant folding, as `onyx info` runs them. Any input
// must give a model or an error; a crash, a hang or memory past libFuzzer's
// -rss_limit_mb is a finding.
#include <cstddef>
#include <cstdint>

#include "ir/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // "" as the external-data root: a fuzzed model may not read files.
  auto model = onyx::runtime::ir::load_model_from_bytes(data, size, "");
  if (!model.ok() && model.status().message().empty()) __builtin_trap();  // errors must say something
  return 0;
}
