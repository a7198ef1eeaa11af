// onnx_import.h: ONNX ModelProto -> ir::Model.
#pragma once

#include <string>

#include "ir/graph.h"

namespace onyx::runtime::ir {

struct ImportOptions {
  // Run type and shape inference after import (ir/shape_inference.h: Onyx's
  // own rules, onnx's for ops without one).
  bool infer_shapes = true;
};

// Reads a model file. External data files are resolved relative to the
// model's folder; a location that leaves that folder is refused.
StatusOr<Model> load_model(const std::string& path, const ImportOptions& options = {});
// Parses a serialized model. `base_dir` roots external data ("" forbids it).
StatusOr<Model> load_model_from_bytes(const void* data, size_t size, const std::string& base_dir,
                                      const ImportOptions& options = {});

}  // namespace onyx::runtime::ir
