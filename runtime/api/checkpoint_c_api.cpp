// checkpoint_c_api.cpp: loading, inspecting, editing and saving checkpoint
// states (onyx_checkpoint_c_api.h) over the checkpoint library; the tools are
// in checkpoint_tools_c_api.cpp. Every entry point is guarded: no exception
// crosses.
#include <onyx/onyx_checkpoint_c_api.h>

#include <algorithm>
#include <cstring>
#include <iterator>
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

// Writes `info` into the caller's struct, up to the size the caller knows.
template <typename Info>
void copy_out(Info info, Info* out) {
  info.struct_size = std::min(out->struct_size, sizeof info);
  std::memcpy(static_cast<void*>(out), &info, info.struct_size);
}

Status out_of_range(const char* what, size_t index, size_t count) {
  return onyx::runtime::invalid_argument(std::string(what) + " index " + std::to_string(index) +
                                         " is out of range (there are " + std::to_string(count) + ")");
}

std::vector<const ck::TensorRecord*> all_parameters(const ck::Checkpoint& c) {
  std::vector<const ck::TensorRecord*> list;
  for (const auto& p : c.module.trainable) list.push_back(&p);
  for (const auto& p : c.module.frozen) list.push_back(&p);
  return list;
}

OnyxCheckpointTensorInfo tensor_info(const ck::TensorRecord& t) {
  OnyxCheckpointTensorInfo info{};
  info.name = t.name.c_str();
  info.dtype = t.dtype;
  info.rank = t.shape.size();
  info.dims = t.shape.data();
  info.bytes = t.bytes();
  info.has_data = t.has_data();
  info.has_checksum = t.checksum.has_value();
  info.checksum = t.checksum.value_or(0);
  info.is_slice = t.slice.has_value();
  if (t.slice) {
    info.slice_offset = t.slice->offset;
    info.full_rank = t.slice->full_shape.size();
    info.full_dims = t.slice->full_shape.data();
  }
  return info;
}

// The group, or an error naming the index.
onyx::runtime::StatusOr<const ck::OptimizerGroup*> group_at(const OnyxCheckpointState* state, size_t group) {
  const auto& groups = state->state->optimizer;
  if (group >= groups.size()) return out_of_range("optimizer group", group, groups.size());
  return &groups[group];
}

onyx::runtime::StatusOr<const ck::ParameterState*> entry_at(const OnyxCheckpointState* state, size_t group,
                                                             size_t parameter) {
  ONYX_ASSIGN_OR_RETURN(const ck::OptimizerGroup* g, group_at(state, group));
  if (parameter >= g->parameters.size())
    return out_of_range(("parameter of optimizer group '" + g->name + "': parameter").c_str(), parameter,
                        g->parameters.size());
  return &g->parameters[parameter];
}

Status load_into(const char* path, const ck::LoadOptions& options, OnyxCheckpointState** out) {
  ONYX_ASSIGN_OR_RETURN(ck::Checkpoint c, ck::load(path, options));
  *out = new_state(std::move(c));
  return Status();
}

}  // namespace

extern "C" {

OnyxStatus* onyx_checkpoint_load(const char* path, OnyxCheckpointState** out) {
  return guarded([&]() -> Status {
    if (!path || !out) return null_arg("onyx_checkpoint_load", "argument");
    return load_into(path, {}, out);
  });
}

OnyxStatus* onyx_checkpoint_load_with_options(const char* path, const OnyxCheckpointLoadOptions* options,
                                              OnyxCheckpointState** out) {
  return guarded([&]() -> Status {
    if (!path || !out) return null_arg("onyx_checkpoint_load_with_options", "argument");
    OnyxCheckpointLoadOptions given{sizeof given, false, true};
    if (options) std::memcpy(&given, options, std::min(options->struct_size, sizeof given));
    ck::LoadOptions load;
    load.mode = given.memory_map ? ck::LoadMode::kMemoryMap : ck::LoadMode::kRead;
    load.verify_data = given.verify_data;
    return load_into(path, load, out);
  });
}

OnyxStatus* onyx_checkpoint_load_from_buffer(const void* data, size_t size, OnyxCheckpointState** out) {
  return guarded([&]() -> Status {
    if (!data || !out) return null_arg("onyx_checkpoint_load_from_buffer", "argument");
    ONYX_ASSIGN_OR_RETURN(ck::Checkpoint c, ck::load_from_memory({static_cast<const std::byte*>(data), size}));
    *out = new_state(std::move(c));
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_verify_data(const OnyxCheckpointState* state) {
  return guarded([&]() -> Status {
    if (!state) return null_arg("onyx_checkpoint_verify_data", "state");
    ONYX_RETURN_IF_ERROR(sync_from_devices(*state));
    return ck::verify_data(*state->state);
  });
}

OnyxStatus* onyx_checkpoint_save(const OnyxCheckpointState* state, const char* path, bool include_optimizer_state) {
  return guarded([&]() -> Status {
    if (!state || !path) return null_arg("onyx_checkpoint_save", "argument");
    ONYX_RETURN_IF_ERROR(sync_from_devices(*state));
    if (include_optimizer_state) return ck::save(*state->state, path);
    ck::Checkpoint copy = *state->state;
    copy.optimizer.clear();
    return ck::save(copy, path);
  });
}

void onyx_checkpoint_release(OnyxCheckpointState* state) { delete state; }

OnyxStatus* onyx_checkpoint_metadata(const OnyxCheckpointState* state, OnyxCheckpointMetadata* out) {
  return guarded([&]() -> Status {
    if (!state || !out) return null_arg("onyx_checkpoint_metadata", "argument");
    const ck::Metadata& m = state->state->metadata;
    OnyxCheckpointMetadata info{};
    info.format_version = m.format_version;
    info.producer = m.producer.c_str();
    info.model_identity = m.model_identity.c_str();
    info.shard_index = m.shard_index;
    info.shard_count = m.shard_count;
    copy_out(info, out);
    return Status();
  });
}

bool onyx_checkpoint_is_nominal(const OnyxCheckpointState* state) { return state && state->state->nominal(); }

size_t onyx_checkpoint_parameter_count(const OnyxCheckpointState* state) {
  return state ? state->state->module.trainable.size() + state->state->module.frozen.size() : 0;
}

OnyxStatus* onyx_checkpoint_parameter_info(const OnyxCheckpointState* state, size_t index, OnyxValueMetadata* out,
                                           bool* requires_grad) {
  return guarded([&]() -> Status {
    if (!state || !out) return null_arg("onyx_checkpoint_parameter_info", "argument");
    auto list = all_parameters(*state->state);
    if (index >= list.size()) return out_of_range("parameter", index, list.size());
    const ck::TensorRecord& p = *list[index];
    OnyxValueMetadata m{};
    m.name = p.name.c_str();
    m.dtype = p.dtype;
    m.rank = int32_t(p.shape.size());
    m.dims = p.shape.data();
    copy_out(m, out);
    if (requires_grad) *requires_grad = index < state->state->module.trainable.size();
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_parameter_tensor(const OnyxCheckpointState* state, size_t index,
                                             OnyxCheckpointTensorInfo* out, bool* trainable) {
  return guarded([&]() -> Status {
    if (!state || !out) return null_arg("onyx_checkpoint_parameter_tensor", "argument");
    ONYX_RETURN_IF_ERROR(sync_from_devices(*state));
    auto list = all_parameters(*state->state);
    if (index >= list.size()) return out_of_range("parameter", index, list.size());
    copy_out(tensor_info(*list[index]), out);
    if (trainable) *trainable = index < state->state->module.trainable.size();
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_get_parameter(const OnyxCheckpointState* state, const char* name, OnyxTensor** out) {
  return guarded([&]() -> Status {
    if (!state || !name || !out) return null_arg("onyx_checkpoint_get_parameter", "argument");
    ONYX_RETURN_IF_ERROR(sync_from_devices(*state));
    const ck::TensorRecord* p = state->state->find_parameter(name);
    if (!p) return onyx::runtime::not_found(std::string("no parameter named '") + name + "'");
    if (!p->has_data())
      return onyx::runtime::failed_precondition(std::string("parameter '") + name + "' has no data (nominal)");
    *out = new OnyxTensor{p->data.clone()};
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_update_parameter(OnyxCheckpointState* state, const char* name, const OnyxTensor* value) {
  return guarded([&]() -> Status {
    if (!state || !name || !value) return null_arg("onyx_checkpoint_update_parameter", "argument");
    ONYX_RETURN_IF_ERROR(sync_from_devices(*state));
    ck::TensorRecord* p = state->state->find_parameter(name);
    if (!p) return onyx::runtime::not_found(std::string("no parameter named '") + name + "'");
    const onyx::runtime::Tensor& v = value->tensor;
    if (v.dtype() != p->dtype || v.shape() != p->shape)
      return onyx::runtime::invalid_argument(
          std::string("update_parameter: '") + name + "' is " + onyx::runtime::dtype_name(p->dtype) + " " +
          onyx::runtime::shape_string(p->shape) + ", the new value is " + onyx::runtime::dtype_name(v.dtype()) +
          " " + onyx::runtime::shape_string(v.shape()));
    p->data = v.clone();
    p->checksum.reset();
    return Status();
  });
}

size_t onyx_checkpoint_group_count(const OnyxCheckpointState* state) {
  return state ? state->state->optimizer.size() : 0;
}

OnyxStatus* onyx_checkpoint_group_info(const OnyxCheckpointState* state, size_t group, OnyxCheckpointGroupInfo* out) {
  return guarded([&]() -> Status {
    if (!state || !out) return null_arg("onyx_checkpoint_group_info", "argument");
    ONYX_ASSIGN_OR_RETURN(const ck::OptimizerGroup* g, group_at(state, group));
    OnyxCheckpointGroupInfo info{};
    info.name = g->name.c_str();
    info.step = g->step;
    info.initial_learning_rate = g->initial_learning_rate;
    info.parameter_count = g->parameters.size();
    copy_out(info, out);
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_group_parameter(const OnyxCheckpointState* state, size_t group, size_t parameter,
                                            const char** name, size_t* state_count) {
  return guarded([&]() -> Status {
    if (!state) return null_arg("onyx_checkpoint_group_parameter", "state");
    ONYX_ASSIGN_OR_RETURN(const ck::ParameterState* p, entry_at(state, group, parameter));
    if (name) *name = p->parameter.c_str();
    if (state_count) *state_count = p->tensors.size();
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_group_state_tensor(const OnyxCheckpointState* state, size_t group, size_t parameter,
                                               size_t index, OnyxCheckpointTensorInfo* out) {
  return guarded([&]() -> Status {
    if (!state || !out) return null_arg("onyx_checkpoint_group_state_tensor", "argument");
    ONYX_RETURN_IF_ERROR(sync_from_devices(*state));
    ONYX_ASSIGN_OR_RETURN(const ck::ParameterState* p, entry_at(state, group, parameter));
    if (index >= p->tensors.size())
      return out_of_range(("state tensor of parameter '" + p->parameter + "': state").c_str(), index,
                          p->tensors.size());
    copy_out(tensor_info(p->tensors[index]), out);
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_set_property_int(OnyxCheckpointState* state, const char* name, int64_t value) {
  return guarded([&]() -> Status {
    if (!state || !name) return null_arg("onyx_checkpoint_set_property_int", "argument");
    state->state->properties[name] = value;
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_set_property_float(OnyxCheckpointState* state, const char* name, double value) {
  return guarded([&]() -> Status {
    if (!state || !name) return null_arg("onyx_checkpoint_set_property_float", "argument");
    state->state->properties[name] = value;
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_set_property_string(OnyxCheckpointState* state, const char* name, const char* value) {
  return guarded([&]() -> Status {
    if (!state || !name || !value) return null_arg("onyx_checkpoint_set_property_string", "argument");
    state->state->properties[name] = std::string(value);
    return Status();
  });
}

OnyxStatus* onyx_checkpoint_get_property(const OnyxCheckpointState* state, const char* name, OnyxPropertyType* type,
                                         int64_t* int_value, double* float_value, char** string_value) {
  return guarded([&]() -> Status {
    if (!state || !name) return null_arg("onyx_checkpoint_get_property", "argument");
    auto it = state->state->properties.find(name);
    if (it == state->state->properties.end())
      return onyx::runtime::not_found(std::string("no property named '") + name + "'");
    if (const auto* i = std::get_if<int64_t>(&it->second)) {
      if (type) *type = ONYX_PROPERTY_INT;
      if (int_value) *int_value = *i;
    } else if (const auto* f = std::get_if<double>(&it->second)) {
      if (type) *type = ONYX_PROPERTY_FLOAT;
      if (float_value) *float_value = *f;
    } else {
      if (type) *type = ONYX_PROPERTY_STRING;
      if (string_value) *string_value = copy_string(std::get<std::string>(it->second));
    }
    return Status();
  });
}

size_t onyx_checkpoint_property_count(const OnyxCheckpointState* state) {
  return state ? state->state->properties.size() : 0;
}

OnyxStatus* onyx_checkpoint_property_at(const OnyxCheckpointState* state, size_t index,
                                        OnyxCheckpointProperty* out) {
  return guarded([&]() -> Status {
    if (!state || !out) return null_arg("onyx_checkpoint_property_at", "argument");
    const auto& properties = state->state->properties;
    if (index >= properties.size()) return out_of_range("property", index, properties.size());
    const auto& [name, value] = *std::next(properties.begin(), std::ptrdiff_t(index));
    OnyxCheckpointProperty info{};
    info.name = name.c_str();
    if (const auto* i = std::get_if<int64_t>(&value)) {
      info.type = ONYX_PROPERTY_INT;
      info.int_value = *i;
    } else if (const auto* f = std::get_if<double>(&value)) {
      info.type = ONYX_PROPERTY_FLOAT;
      info.float_value = *f;
    } else {
      const std::string& text = std::get<std::string>(value);
      info.type = ONYX_PROPERTY_STRING;
      info.string_value = text.c_str();
      info.string_size = text.size();
    }
    copy_out(info, out);
    return Status();
  });
}

}  // extern "C"
