/*
 * onyx_checkpoint_c_api.h: Onyx training checkpoints (C), part of libonyx.
 *
 * An OnyxCheckpointState holds what a checkpoint file holds (the format is
 * docs/checkpoint-format.md): module state (trainable and frozen parameters),
 * optimizer state in groups, a property bag and metadata. This API loads,
 * inspects, edits and saves one, and offers the tools built on the format:
 * nominal copies, ZeRO-1 sharding and aggregation, comparison, and exchange
 * with ONNX models' initializers. Training (onyx_training_c_api.h) runs
 * against a state loaded here.
 *
 * Conventions are those of onyx_c_api.h:
 *  - A NULL status is success; a returned status belongs to the caller
 *    (onyx_status_release). Errors name the file and, where one is at fault,
 *    the tensor, parameter or group.
 *  - `out` parameters are written only on success.
 *  - Every OnyxCheckpointState an `out` parameter receives is new and belongs
 *    to the caller (onyx_checkpoint_release); input states are never kept.
 *  - `const char*` and `const int64_t*` results point into the state and stay
 *    valid until it is released or changed through a non-const function
 *    (an update, a set_property, a training step on a session using it).
 *    `char**` results belong to the caller (onyx_string_release).
 *  - Info structs begin with `struct_size`, which the caller sets to
 *    sizeof(the struct) it was compiled with; fields beyond it are not written.
 *  - No C++ exception crosses this API.
 * Thread-safety: functions taking a `const OnyxCheckpointState*` may run
 * concurrently on the same state; one taking a non-const state (or a training
 * session using the state) needs it to itself. Distinct states are independent.
 */
#ifndef ONYX_CHECKPOINT_C_API_H_
#define ONYX_CHECKPOINT_C_API_H_

#include <stdbool.h>

#include "onyx_c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OnyxCheckpointState OnyxCheckpointState;

/* ---- loading and saving ------------------------------------------------------ */

/* Reads a checkpoint file of any format version up to the library's, checking
 * the header, the table and every tensor's checksum. Thread-safe. */
ONYX_API OnyxStatus* onyx_checkpoint_load(const char* path, OnyxCheckpointState** out);

typedef struct OnyxCheckpointLoadOptions {
  size_t struct_size;
  /* Map the file privately (copy-on-write) instead of reading it: tensors are
   * views of the mapping, which lives as long as the state. The file must not
   * be truncated or rewritten in place while mapped: touching pages it lost
   * raises SIGBUS in this process (docs/checkpoint-format.md). Read instead
   * (false) when another process may change the file. */
  bool memory_map;
  /* Check every tensor's checksum now (the header and table are always
   * checked). Off makes a mapped load touch no tensor data; see
   * onyx_checkpoint_verify_data. */
  bool verify_data;
} OnyxCheckpointLoadOptions;
/* onyx_checkpoint_load with options; NULL options: read and verify. Thread-safe. */
ONYX_API OnyxStatus* onyx_checkpoint_load_with_options(const char* path, const OnyxCheckpointLoadOptions* options,
                                                       OnyxCheckpointState** out);
/* From a file's bytes in memory. The bytes are copied; the buffer may be freed
 * after the call. Thread-safe. */
ONYX_API OnyxStatus* onyx_checkpoint_load_from_buffer(const void* data, size_t size, OnyxCheckpointState** out);
/* Recomputes every tensor's checksum and compares it with the one the file
 * stored (DATA_LOSS naming the tensor on a mismatch). */
ONYX_API OnyxStatus* onyx_checkpoint_verify_data(const OnyxCheckpointState* state);
/* Writes the state to `path` atomically: a temporary file beside it is
 * written, flushed and renamed over `path`, and the folder flushed; a crash
 * leaves the old file or the new one. Without optimizer state when
 * include_optimizer_state is false. */
ONYX_API OnyxStatus* onyx_checkpoint_save(const OnyxCheckpointState* state, const char* path,
                                          bool include_optimizer_state);
/* Release after every training session created with it. Accepts NULL. */
ONYX_API void onyx_checkpoint_release(OnyxCheckpointState* state);

/* ---- what a state holds -------------------------------------------------------- */

typedef struct OnyxCheckpointMetadata {
  size_t struct_size;
  uint32_t format_version;    /* of the file it was loaded from; saving writes the library's */
  const char* producer;       /* "onyx 0.1.0"; "" for a state not loaded from a file */
  const char* model_identity; /* free text naming the model; may be "" */
  uint32_t shard_index;       /* this rank, below shard_count */
  uint32_t shard_count;       /* 1: not sharded */
} OnyxCheckpointMetadata;
ONYX_API OnyxStatus* onyx_checkpoint_metadata(const OnyxCheckpointState* state, OnyxCheckpointMetadata* out);

/* True when there is at least one tensor and none carries data (a nominal
 * checkpoint: names, dtypes and shapes only). False for NULL. */
ONYX_API bool onyx_checkpoint_is_nominal(const OnyxCheckpointState* state);

/* One stored tensor: a parameter or an optimizer state tensor. */
typedef struct OnyxCheckpointTensorInfo {
  size_t struct_size;
  const char* name;
  int32_t dtype; /* OnyxDataType */
  size_t rank;
  const int64_t* dims;    /* the stored shape (for a slice: 1-D, its element count) */
  uint64_t bytes;         /* the stored data's size (4-bit types pack two per byte) */
  bool has_data;          /* false in a nominal checkpoint */
  bool has_checksum;      /* the file stored a CRC32C for it (set after loading) */
  uint32_t checksum;      /* CRC32C (Castagnoli) of the data as stored */
  bool is_slice;          /* one rank's slice of a sharded tensor: */
  int64_t slice_offset;   /*   its first element in the row-major flattened tensor */
  size_t full_rank;       /*   and the whole tensor's shape */
  const int64_t* full_dims;
} OnyxCheckpointTensorInfo;

/* Parameters: trainable ones first, then frozen ones, each in the training
 * model's order. */
ONYX_API size_t onyx_checkpoint_parameter_count(const OnyxCheckpointState* state);
ONYX_API OnyxStatus* onyx_checkpoint_parameter_info(const OnyxCheckpointState* state, size_t index,
                                                    OnyxValueMetadata* out, bool* requires_grad);
/* The stored record of parameter `index` (order as above); *trainable (may be
 * NULL) says whether it receives gradients. */
ONYX_API OnyxStatus* onyx_checkpoint_parameter_tensor(const OnyxCheckpointState* state, size_t index,
                                                      OnyxCheckpointTensorInfo* out, bool* trainable);
/* A copy of one parameter's value (a new tensor the caller releases). */
ONYX_API OnyxStatus* onyx_checkpoint_get_parameter(const OnyxCheckpointState* state, const char* name,
                                                   OnyxTensor** out);
/* Replaces one parameter's value (copied); dtype and shape must match. */
ONYX_API OnyxStatus* onyx_checkpoint_update_parameter(OnyxCheckpointState* state, const char* name,
                                                      const OnyxTensor* value);

/* Optimizer state, in groups (e.g. one per learning rate). Each group holds
 * its step count and initial learning rate, and for each trainable parameter
 * it updates the state tensors ("momentum1", ...). */
typedef struct OnyxCheckpointGroupInfo {
  size_t struct_size;
  const char* name;
  int64_t step;
  double initial_learning_rate;
  size_t parameter_count; /* parameters with state in this group */
} OnyxCheckpointGroupInfo;
ONYX_API size_t onyx_checkpoint_group_count(const OnyxCheckpointState* state);
ONYX_API OnyxStatus* onyx_checkpoint_group_info(const OnyxCheckpointState* state, size_t group,
                                                OnyxCheckpointGroupInfo* out);
/* Entry `parameter` of a group: the parameter's name and its number of state tensors. */
ONYX_API OnyxStatus* onyx_checkpoint_group_parameter(const OnyxCheckpointState* state, size_t group,
                                                     size_t parameter, const char** name, size_t* state_count);
/* State tensor `index` of that entry (named by state, e.g. "momentum1"). */
ONYX_API OnyxStatus* onyx_checkpoint_group_state_tensor(const OnyxCheckpointState* state, size_t group,
                                                        size_t parameter, size_t index,
                                                        OnyxCheckpointTensorInfo* out);

/* The property bag: int64, double or string values by name (copied). */
typedef enum OnyxPropertyType {
  ONYX_PROPERTY_INT = 0,
  ONYX_PROPERTY_FLOAT = 1,
  ONYX_PROPERTY_STRING = 2
} OnyxPropertyType;
ONYX_API OnyxStatus* onyx_checkpoint_set_property_int(OnyxCheckpointState* state, const char* name, int64_t value);
ONYX_API OnyxStatus* onyx_checkpoint_set_property_float(OnyxCheckpointState* state, const char* name, double value);
ONYX_API OnyxStatus* onyx_checkpoint_set_property_string(OnyxCheckpointState* state, const char* name,
                                                         const char* value);
/* Writes the type and the matching value out-parameter (the others are left
 * alone; any may be NULL). *string_value belongs to the caller. NOT_FOUND
 * when there is no such property. */
ONYX_API OnyxStatus* onyx_checkpoint_get_property(const OnyxCheckpointState* state, const char* name,
                                                  OnyxPropertyType* type, int64_t* int_value,
                                                  double* float_value, char** string_value);
/* Every property, in byte order of the names. */
typedef struct OnyxCheckpointProperty {
  size_t struct_size;
  const char* name;
  OnyxPropertyType type;
  int64_t int_value;          /* ONYX_PROPERTY_INT */
  double float_value;         /* ONYX_PROPERTY_FLOAT */
  const char* string_value;   /* ONYX_PROPERTY_STRING: NUL-terminated, and string_size */
  size_t string_size;         /* bytes long (the format allows NUL bytes inside) */
} OnyxCheckpointProperty;
ONYX_API size_t onyx_checkpoint_property_count(const OnyxCheckpointState* state);
ONYX_API OnyxStatus* onyx_checkpoint_property_at(const OnyxCheckpointState* state, size_t index,
                                                 OnyxCheckpointProperty* out);

/* ---- tools ----------------------------------------------------------------------- */

/* The same schema (names, dtypes, shapes, groups, properties, metadata)
 * without any tensor's data: what federated clients receive. */
ONYX_API OnyxStatus* onyx_checkpoint_make_nominal(const OnyxCheckpointState* state, OnyxCheckpointState** out);

/* Splits a complete (unsharded) state for `world_size` ranks the way ZeRO
 * stage 1 partitions it (docs/checkpoint-format.md, "Sharding"). `out` must
 * have room for world_size entries; out[r] receives rank r's state. */
ONYX_API OnyxStatus* onyx_checkpoint_shard(const OnyxCheckpointState* complete, uint32_t world_size,
                                           OnyxCheckpointState** out);

/* Merges one shard per rank (any order) into the complete state. Slices must
 * tile each tensor; everything unsharded must agree across ranks. With
 * weights_only, optimizer state is dropped. Errors name the tensor and the ranks. */
ONYX_API OnyxStatus* onyx_checkpoint_aggregate(const OnyxCheckpointState* const* shards, size_t count,
                                               bool weights_only, OnyxCheckpointState** out);

/* Every difference between two states (model identity and shard position,
 * tensors bit for bit, groups, properties; not the producer or format
 * version), one line each, each ending in '\n'; "" when they are equal.
 * *count (may be NULL) receives the number of differences. */
ONYX_API OnyxStatus* onyx_checkpoint_diff(const OnyxCheckpointState* a, const OnyxCheckpointState* b,
                                          char** report, size_t* count);

/* ---- ONNX models ------------------------------------------------------------------ */

/* A complete state from the initializers of the ONNX model at `model_path`:
 * the floating-point initializers named in `trainable` are trainable (all
 * floating-point ones when trainable_count is 0), the rest frozen. External
 * data is read relative to the model's folder. Thread-safe. */
ONYX_API OnyxStatus* onyx_checkpoint_import_onnx(const char* model_path, const char* const* trainable,
                                                 size_t trainable_count, OnyxCheckpointState** out);

/* Writes to `out_path` the ONNX model at `model_path` with the initializers
 * that share a parameter's name replaced by the parameter's value (dtype and
 * shape must match). Parameters the model has no initializer for are an
 * error, or added as initializers with add_missing. external_data_file NULL:
 * every weight inline (models above protobuf's 2 GiB limit are refused);
 * otherwise the weights of 1 KiB or more go to that file (a name, created in
 * out_path's folder) as ONNX external data. Both files are written
 * atomically. Thread-safe with other readers of the state. */
ONYX_API OnyxStatus* onyx_checkpoint_export_onnx(const OnyxCheckpointState* state, const char* model_path,
                                                 const char* out_path, bool add_missing,
                                                 const char* external_data_file);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONYX_CHECKPOINT_C_API_H_ */
