// onyx_checkpoint.hpp: a thin header-only C++ wrapper over
// onyx_checkpoint_c_api.h. RAII handles; failures throw onyx::Error (nothing
// throws across the C API itself). What a state holds is returned as plain
// copies (CheckpointTensor, CheckpointGroup, ...), which outlive the state.
// Lifetime: a CheckpointState must outlive the TrainingSessions made with it.
// Thread-safety: as the C API (const members may run concurrently on one
// state; the others, and training sessions using it, need it to themselves).
#pragma once

#include <onyx/onyx.hpp>
#include <onyx/onyx_checkpoint_c_api.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace onyx {

// One stored tensor (a parameter or an optimizer state tensor).
struct CheckpointTensor {
  struct Slice {
    int64_t offset = 0;               // first element in the row-major flattened tensor
    std::vector<int64_t> full_shape;  // the whole tensor's shape
  };
  std::string name;
  OnyxDataType dtype = ONYX_DTYPE_UNDEFINED;
  std::vector<int64_t> shape;  // as stored (a slice is 1-D)
  uint64_t bytes = 0;
  bool has_data = false;
  std::optional<uint32_t> checksum;  // CRC32C stored in the file
  std::optional<Slice> slice;        // set for one rank's slice of a sharded tensor
};

struct CheckpointParameterState {
  std::string parameter;
  std::vector<CheckpointTensor> tensors;  // named by state ("momentum1")
};

struct CheckpointGroup {
  std::string name;
  int64_t step = 0;
  double initial_learning_rate = 0;
  std::vector<CheckpointParameterState> parameters;
};

struct CheckpointMetadata {
  uint32_t format_version = 0;
  std::string producer;
  std::string model_identity;
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
};

using CheckpointProperty = std::variant<int64_t, double, std::string>;

class CheckpointState {
 public:
  struct LoadOptions {
    bool memory_map = false;   // map the file instead of reading it
    bool verify_data = true;   // check every tensor's checksum now
  };

  static CheckpointState load(const std::string& path) {
    OnyxCheckpointState* s = nullptr;
    check(onyx_checkpoint_load(path.c_str(), &s));
    return CheckpointState(s);
  }
  static CheckpointState load(const std::string& path, const LoadOptions& options) {
    OnyxCheckpointLoadOptions o{sizeof o, options.memory_map, options.verify_data};
    OnyxCheckpointState* s = nullptr;
    check(onyx_checkpoint_load_with_options(path.c_str(), &o, &s));
    return CheckpointState(s);
  }
  static CheckpointState load_from_buffer(const void* data, size_t size) {
    OnyxCheckpointState* s = nullptr;
    check(onyx_checkpoint_load_from_buffer(data, size, &s));
    return CheckpointState(s);
  }
  // A complete state from an ONNX model's initializers (all floating-point
  // ones trainable when `trainable` is empty).
  static CheckpointState import_onnx(const std::string& model_path, const std::vector<std::string>& trainable = {}) {
    std::vector<const char*> names;
    for (const std::string& n : trainable) names.push_back(n.c_str());
    OnyxCheckpointState* s = nullptr;
    check(onyx_checkpoint_import_onnx(model_path.c_str(), names.data(), names.size(), &s));
    return CheckpointState(s);
  }
  // Merges one shard per rank into the complete state.
  static CheckpointState aggregate(const std::vector<const CheckpointState*>& shards, bool weights_only = false) {
    std::vector<const OnyxCheckpointState*> raw;
    for (const CheckpointState* s : shards) raw.push_back(s->get());
    OnyxCheckpointState* s = nullptr;
    check(onyx_checkpoint_aggregate(raw.data(), raw.size(), weights_only, &s));
    return CheckpointState(s);
  }
  // Every difference between a and b, one line each; empty when equal.
  static std::vector<std::string> diff(const CheckpointState& a, const CheckpointState& b) {
    char* report = nullptr;
    check(onyx_checkpoint_diff(a.get(), b.get(), &report, nullptr));
    std::string text = detail::take_string(report);
    std::vector<std::string> lines;
    for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1)
      lines.push_back(text.substr(at, end - at));
    return lines;
  }

  void save(const std::string& path, bool include_optimizer_state = true) const {
    check(onyx_checkpoint_save(raw_.get(), path.c_str(), include_optimizer_state));
  }
  void verify_data() const { check(onyx_checkpoint_verify_data(raw_.get())); }
  bool nominal() const { return onyx_checkpoint_is_nominal(raw_.get()); }

  CheckpointMetadata metadata() const {
    OnyxCheckpointMetadata m{};
    m.struct_size = sizeof m;
    check(onyx_checkpoint_metadata(raw_.get(), &m));
    return {m.format_version, m.producer, m.model_identity, m.shard_index, m.shard_count};
  }
  std::vector<CheckpointTensor> trainable() const { return parameters(true); }
  std::vector<CheckpointTensor> frozen() const { return parameters(false); }
  std::vector<CheckpointGroup> optimizer_groups() const {
    std::vector<CheckpointGroup> groups;
    for (size_t g = 0; g < onyx_checkpoint_group_count(raw_.get()); ++g) {
      OnyxCheckpointGroupInfo info{};
      info.struct_size = sizeof info;
      check(onyx_checkpoint_group_info(raw_.get(), g, &info));
      CheckpointGroup group{info.name, info.step, info.initial_learning_rate, {}};
      for (size_t p = 0; p < info.parameter_count; ++p) {
        const char* name = nullptr;
        size_t count = 0;
        check(onyx_checkpoint_group_parameter(raw_.get(), g, p, &name, &count));
        CheckpointParameterState entry{name, {}};
        for (size_t k = 0; k < count; ++k) {
          OnyxCheckpointTensorInfo t{};
          t.struct_size = sizeof t;
          check(onyx_checkpoint_group_state_tensor(raw_.get(), g, p, k, &t));
          entry.tensors.push_back(copy(t));
        }
        group.parameters.push_back(std::move(entry));
      }
      groups.push_back(std::move(group));
    }
    return groups;
  }
  std::map<std::string, CheckpointProperty> properties() const {
    std::map<std::string, CheckpointProperty> all;
    for (size_t k = 0; k < onyx_checkpoint_property_count(raw_.get()); ++k) {
      OnyxCheckpointProperty p{};
      p.struct_size = sizeof p;
      check(onyx_checkpoint_property_at(raw_.get(), k, &p));
      if (p.type == ONYX_PROPERTY_INT) all[p.name] = p.int_value;
      else if (p.type == ONYX_PROPERTY_FLOAT) all[p.name] = p.float_value;
      else all[p.name] = std::string(p.string_value, p.string_size);
    }
    return all;
  }

  Tensor parameter(const std::string& name) const {
    OnyxTensor* t = nullptr;
    check(onyx_checkpoint_get_parameter(raw_.get(), name.c_str(), &t));
    return Tensor(t);
  }
  void update_parameter(const std::string& name, const Tensor& value) {
    check(onyx_checkpoint_update_parameter(raw_.get(), name.c_str(), value.get()));
  }
  void set_property(const std::string& name, int64_t v) { check(onyx_checkpoint_set_property_int(raw_.get(), name.c_str(), v)); }
  void set_property(const std::string& name, double v) { check(onyx_checkpoint_set_property_float(raw_.get(), name.c_str(), v)); }
  void set_property(const std::string& name, const std::string& v) {
    check(onyx_checkpoint_set_property_string(raw_.get(), name.c_str(), v.c_str()));
  }

  CheckpointState make_nominal() const {
    OnyxCheckpointState* s = nullptr;
    check(onyx_checkpoint_make_nominal(raw_.get(), &s));
    return CheckpointState(s);
  }
  // ZeRO stage 1 shards of this complete state, one per rank.
  std::vector<CheckpointState> shard(uint32_t world_size) const {
    std::vector<OnyxCheckpointState*> raw(world_size, nullptr);
    check(onyx_checkpoint_shard(raw_.get(), world_size, raw.data()));
    std::vector<CheckpointState> shards;
    for (OnyxCheckpointState* s : raw) shards.push_back(CheckpointState(s));
    return shards;
  }
  // Writes the model at model_path with this state's parameters as its
  // initializers to out_path; weights go to `external_data_file` beside it
  // when that is not empty.
  void export_onnx(const std::string& model_path, const std::string& out_path, bool add_missing = false,
                   const std::string& external_data_file = "") const {
    check(onyx_checkpoint_export_onnx(raw_.get(), model_path.c_str(), out_path.c_str(), add_missing,
                                      external_data_file.empty() ? nullptr : external_data_file.c_str()));
  }

  OnyxCheckpointState* get() const { return raw_.get(); }

 private:
  explicit CheckpointState(OnyxCheckpointState* raw) : raw_(raw) {}

  static CheckpointTensor copy(const OnyxCheckpointTensorInfo& t) {
    CheckpointTensor out{t.name, OnyxDataType(t.dtype), {t.dims, t.dims + t.rank}, t.bytes, t.has_data, {}, {}};
    if (t.has_checksum) out.checksum = t.checksum;
    if (t.is_slice) out.slice = CheckpointTensor::Slice{t.slice_offset, {t.full_dims, t.full_dims + t.full_rank}};
    return out;
  }
  std::vector<CheckpointTensor> parameters(bool trainable) const {
    std::vector<CheckpointTensor> list;
    for (size_t k = 0; k < onyx_checkpoint_parameter_count(raw_.get()); ++k) {
      OnyxCheckpointTensorInfo t{};
      t.struct_size = sizeof t;
      bool is_trainable = false;
      check(onyx_checkpoint_parameter_tensor(raw_.get(), k, &t, &is_trainable));
      if (is_trainable == trainable) list.push_back(copy(t));
    }
    return list;
  }

  std::unique_ptr<OnyxCheckpointState, detail::Deleter<OnyxCheckpointState, onyx_checkpoint_release>> raw_;
};

}  // namespace onyx
