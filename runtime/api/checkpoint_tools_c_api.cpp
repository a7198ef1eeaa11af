// checkpoint_tools_c_api.cpp: the checkpoint tools of onyx_checkpoint_c_api.h
// (nominal copies, sharding, aggregation, comparison, ONNX exchange) over
// checkpoint/include/onyx/checkpoint_{tools,onnx}.h. Every entry point is
// guarded: no exception crosses.
#include <onyx/checkpoint_onnx.h>
#include <onyx/checkpoint_tools.h>
#include <onyx/onyx_checkpoint_c_api.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "api/checkpoint_state.h"

namespace {

namespace ck = onyx::checkpoint;
using onyx::runtime::Status;
using onyx::runtime::capi::copy_string;
using onyx::runtime::capi::guarded;
using onyx::runtime::capi::new_state;
using onyx::runtime::capi::null_arg;
using onyx::runtime::capi::sync_from_devices;

}  // namespace

extern "C" {

OnyxStatus* onyx_checkpoint_make_nominal(const OnyxCheckpointState* state, OnyxCheckpointState** out) {
  return guarded([&]() -> Status {
    if (!state || !out) return null_arg("onyx_checkpoint_make_nominal", "argument");
    *out = new_state(ck::make_nominal(*state->state));
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_shard(const OnyxCheckpointState* complete, uint32_t world_size,
                                  OnyxCheckpointState** out) {
  return guarded([&]() -> Status {
    if (!complete || !out) return null_arg("onyx_checkpoint_shard", "argument");
    ONYX_RETURN_IF_ERROR(sync_from_devices(*complete));
    ONYX_ASSIGN_OR_RETURN(std::vector<ck::Checkpoint> shards, ck::shard(*complete->state, world_size));
    // Every state is made before any is handed out, so a failure leaks none.
    std::vector<std::unique_ptr<OnyxCheckpointState>> made;
    for (ck::Checkpoint& s : shards) made.emplace_back(new_state(std::move(s)));
    for (size_t r = 0; r < made.size(); ++r) out[r] = made[r].release();
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_aggregate(const OnyxCheckpointState* const* shards, size_t count, bool weights_only,
                                      OnyxCheckpointState** out) {
  return guarded([&]() -> Status {
    if ((count && !shards) || !out) return null_arg("onyx_checkpoint_aggregate", "argument");
    std::vector<ck::Checkpoint> inputs;
    for (size_t k = 0; k < count; ++k) {
      if (!shards[k]) return null_arg("onyx_checkpoint_aggregate", "a shard");
      ONYX_RETURN_IF_ERROR(sync_from_devices(*shards[k]));
      inputs.push_back(*shards[k]->state);  // shares the tensors' storage, copies no data
    }
    ONYX_ASSIGN_OR_RETURN(ck::Checkpoint merged, ck::aggregate(inputs, {.weights_only = weights_only}));
    *out = new_state(std::move(merged));
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_diff(const OnyxCheckpointState* a, const OnyxCheckpointState* b, char** report,
                                 size_t* count) {
  return guarded([&]() -> Status {
    if (!a || !b || !report) return null_arg("onyx_checkpoint_diff", "argument");
    ONYX_RETURN_IF_ERROR(sync_from_devices(*a));
    ONYX_RETURN_IF_ERROR(sync_from_devices(*b));
    std::vector<std::string> lines = ck::diff(*a->state, *b->state);
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    *report = copy_string(text);
    if (count) *count = lines.size();
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_import_onnx(const char* model_path, const char* const* trainable, size_t trainable_count,
                                        OnyxCheckpointState** out) {
  return guarded([&]() -> Status {
    if (!model_path || (trainable_count && !trainable) || !out)
      return null_arg("onyx_checkpoint_import_onnx", "argument");
    std::vector<std::string> names;
    for (size_t k = 0; k < trainable_count; ++k) {
      if (!trainable[k]) return null_arg("onyx_checkpoint_import_onnx", "a trainable name");
      names.emplace_back(trainable[k]);
    }
    ONYX_ASSIGN_OR_RETURN(ONNX_NAMESPACE::ModelProto model, ck::read_onnx_model(model_path));
    std::filesystem::path folder = std::filesystem::path(model_path).parent_path();  // external data is relative to it
    ONYX_ASSIGN_OR_RETURN(ck::Checkpoint c,
                          ck::import_onnx_initializers(model, folder.empty() ? "." : folder.string(), names));
    *out = new_state(std::move(c));
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_export_onnx(const OnyxCheckpointState* state, const char* model_path, const char* out_path,
                                        bool add_missing, const char* external_data_file) {
  return guarded([&]() -> Status {
    if (!state || !model_path || !out_path) return null_arg("onyx_checkpoint_export_onnx", "argument");
    ONYX_RETURN_IF_ERROR(sync_from_devices(*state));
    ONYX_ASSIGN_OR_RETURN(ONNX_NAMESPACE::ModelProto model, ck::read_onnx_model(model_path));
    ONYX_RETURN_IF_ERROR(ck::export_parameters_to_onnx(*state->state, model, add_missing));
    if (external_data_file)
      return ck::write_onnx_model_with_external_data(std::move(model), out_path, external_data_file);
    return ck::write_onnx_model(model, out_path);
  });
}

}  // extern "C"
