// checkpoint.h: Onyx training checkpoints: what one holds, and saving and
// loading them. The file format is described field by field in
// docs/checkpoint-format.md.
//
// A Checkpoint is a plain value: module state (trainable and frozen
// parameters), optimizer state, a property bag and metadata. Tensors are
// onyx::runtime::Tensor, so data loaded by memory map is a zero-copy view that keeps
// the mapping alive for as long as any tensor taken from it lives.
//
// Thread-safety: every function here is safe to call concurrently on
// different Checkpoint values; a Checkpoint itself is not synchronized.
// Nothing here throws except std::bad_alloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace onyx::checkpoint {

// The runtime's base layer (runtime/core): the types checkpoints are made of
// and the one status type's constructors.
using runtime::Shape;
using runtime::Status;
using runtime::StatusOr;
using runtime::Tensor;
using runtime::element_count;
using runtime::storage_bytes;
using runtime::dtype_name;
using runtime::dtype_size;
using runtime::shape_string;
using runtime::data_loss;
using runtime::failed_precondition;
using runtime::incompatible;
using runtime::internal_error;
using runtime::invalid_argument;
using runtime::not_found;
using runtime::unimplemented;

// The format version this library writes. It reads every version from 1 up
// to this one and refuses newer files, naming both versions.
inline constexpr uint32_t kFormatVersion = 1;

// For one rank's slice of a sharded tensor: the stored tensor is 1-D and
// holds elements [offset, offset + stored element count) of the row-major
// flattened tensor whose shape is `full_shape`.
struct ShardSlice {
  Shape full_shape;
  int64_t offset = 0;
  bool operator==(const ShardSlice&) const = default;
};

// One named tensor. `dtype` is an OnyxDataType with a fixed element size
// (every ONNX type except STRING; 4-bit types pack two per byte). In a
// nominal checkpoint `data` is empty; otherwise data.dtype() == dtype and
// data.shape() == shape.
struct TensorRecord {
  std::string name;
  int32_t dtype = ONYX_DTYPE_UNDEFINED;
  Shape shape;
  Tensor data;
  std::optional<ShardSlice> slice;   // set when this is one rank's slice of a larger tensor
  std::optional<uint32_t> checksum;  // CRC32C of the data as stored in the file (set by load)

  bool has_data() const { return !data.empty(); }
  size_t bytes() const { return storage_bytes(dtype, element_count(shape)); }
};

// The model's parameters, each list in the training model's order.
struct ModuleState {
  std::vector<TensorRecord> trainable;  // parameters that receive gradients
  std::vector<TensorRecord> frozen;
};

// One parameter's optimizer state, e.g. AdamW's "momentum1" and "momentum2".
struct ParameterState {
  std::string parameter;              // a name in ModuleState::trainable
  std::vector<TensorRecord> tensors;  // named by state ("momentum1")
};

struct OptimizerGroup {
  std::string name;
  int64_t step = 0;
  double initial_learning_rate = 0;
  std::vector<ParameterState> parameters;
};

using PropertyValue = std::variant<int64_t, double, std::string>;

struct Metadata {
  uint32_t format_version = kFormatVersion;  // of the file read; save() always writes kFormatVersion
  std::string producer;                      // "onyx 0.1.0"; save() fills it in when empty
  std::string model_identity;                // free text naming the model the state belongs to
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;  // 1: not sharded
};

struct Checkpoint {
  Metadata metadata;
  ModuleState module;
  std::vector<OptimizerGroup> optimizer;  // empty when saved without optimizer state
  std::map<std::string, PropertyValue> properties;

  // True when there is at least one tensor and no tensor carries data.
  bool nominal() const;
  // The parameter (trainable or frozen) with this name, or null.
  const TensorRecord* find_parameter(std::string_view name) const;
  TensorRecord* find_parameter(std::string_view name);
  const OptimizerGroup* find_group(std::string_view name) const;
};

// Checks what a file needs: names unique where they must be (parameters,
// groups, states of one parameter), non-empty; dtypes of fixed size; shapes
// non-negative; data matching dtype and shape; data on every tensor or on
// none (nominal); optimizer state naming existing trainable parameters;
// shard index below the count and slices inside their full shape. The
// message names the offending tensor.
Status validate(const Checkpoint& checkpoint);

// Writes `checkpoint` to `path` atomically: a temporary file beside it is
// written, flushed to disk and renamed over `path`, and the folder is
// flushed; a crash at any moment leaves either the old file or the new one.
Status save(const Checkpoint& checkpoint, const std::filesystem::path& path);

// The bytes save() would write (for sending a checkpoint over the network).
StatusOr<std::vector<std::byte>> serialize(const Checkpoint& checkpoint);

enum class LoadMode {
  kRead,       // read the file into one buffer that the returned tensors share
  kMemoryMap,  // map the file privately: tensors are copy-on-write views of it
};

struct LoadOptions {
  LoadMode mode = LoadMode::kRead;
  // Check every tensor's checksum now. The header and table of contents are
  // always checked, and every offset and length is checked against the file
  // size, whatever this says. Off makes a memory-mapped load touch no tensor
  // data; call verify_data() later to check it.
  bool verify_data = true;
};

// Loads a checkpoint of any format version up to kFormatVersion. Errors name
// the file and, for corrupt data, the tensor.
StatusOr<Checkpoint> load(const std::filesystem::path& path, const LoadOptions& options = {});

// Parses checkpoint bytes (a file's whole contents), copying the data.
StatusOr<Checkpoint> load_from_memory(std::span<const std::byte> bytes, bool verify_data = true);

// Recomputes every tensor's checksum and compares it with the one loaded
// from the file (tensors without a stored checksum are skipped).
Status verify_data(const Checkpoint& checkpoint);

// CRC32C (Castagnoli) of `bytes`, continuing from `crc` (0 to start).
uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc = 0);

}  // namespace onyx::checkpoint
