// onnx_import.h: ONNX ModelProto -> ir::Model.
#pragma once

#include <string>

#include "ir/graph.h"

namespace onyx::ir {

struct ImportOptions {
  // Run type and shape inference after import (onnx's for ops it knows, the
  // runtime's own for the rest).
  bool infer_shapes = true;
};

// Reads a model file. External data files are resolved relative to the
// model's folder; a location that leaves that folder is refused.
StatusOr<Model> load_model(const std::string& path, const ImportOptions& options = {});
// Parses a serialized model. `base_dir` roots external data ("" forbids it).
StatusOr<Model> load_model_from_bytes(const void* data, size_t size, const std::string& base_dir,
                                      const ImportOptions& options = {});

}  // namespace onyx::ir
