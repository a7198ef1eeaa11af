// checkpoint_onnx.h: exchanging parameters between checkpoints and ONNX
// models' initializers.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <span>
#include <string>

#include "onyx/checkpoint.h"

namespace onyx::checkpoint {

// A complete checkpoint whose trainable parameters are the model's float
// initializers named in `trainable` (all floating-point initializers when
// empty) and whose frozen parameters are the other initializers. External
// data is read relative to `model_dir` ("" forbids it).
StatusOr<Checkpoint> import_onnx_initializers(const ONNX_NAMESPACE::ModelProto& model,
                                              const std::string& model_dir,
                                              std::span<const std::string> trainable = {});

// Replaces the initializers of `model` that share a parameter's name with
// the checkpoint's values (dtype and shape must match; the data is stored
// inline as raw_data). Parameters without such an initializer are added as
// initializers only when `add_missing` is set; otherwise they are an error.
Status export_parameters_to_onnx(const Checkpoint& checkpoint, ONNX_NAMESPACE::ModelProto& model,
                                 bool add_missing = false);

// Reads an ONNX model file (external data stays on disk; pass the model's
// folder to import_onnx_initializers to read it).
StatusOr<ONNX_NAMESPACE::ModelProto> read_onnx_model(const std::filesystem::path& path);

// Writes `model` atomically, as save() writes checkpoints. Models above
// protobuf's 2 GiB limit are refused with that reason.
Status write_onnx_model(const ONNX_NAMESPACE::ModelProto& model, const std::filesystem::path& path);

// Writes `model` to `path` with the raw data of every initializer of at least
// `min_bytes` moved into `data_file` (a file name, created in path's folder)
// as ONNX external data: 64-byte aligned, with location, offset and length
// entries. No size limit. Both files are written atomically, the data file
// first. Initializers that are already external keep their references.
Status write_onnx_model_with_external_data(ONNX_NAMESPACE::ModelProto model, const std::filesystem::path& path,
                                           const std::string& data_file, size_t min_bytes = 1024);

}  // namespace onyx::checkpoint
