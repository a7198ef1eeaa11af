// checkpoint.cpp: the Checkpoint value's helpers, validation, and the
// header layout shared by the writer and the reader.
#include <cstring>
#include <set>

#include "byte_io.h"
#include "format.h"

namespace onyx::checkpoint {

namespace {

template <typename CheckpointT, typename Fn>
void visit_tensors(CheckpointT& c, Fn&& fn) {
  for (auto& t : c.module.trainable) fn(t, "trainable parameter '" + t.name + "'");
  for (auto& t : c.module.frozen) fn(t, "frozen parameter '" + t.name + "'");
  for (auto& group : c.optimizer)
    for (auto& param : group.parameters)
      for (auto& t : param.tensors)
        fn(t, "optimizer group '" + group.name + "' state '" + t.name + "' of parameter '" +
                  param.parameter + "'");
}

bool fixed_size_dtype(int32_t dtype) {
  return dtype_size(dtype) > 0 || dtype == ONYX_DTYPE_INT4 || dtype == ONYX_DTYPE_UINT4 ||
         dtype == ONYX_DTYPE_FLOAT4E2M1;
}

}  // namespace

void for_each_tensor(const Checkpoint& checkpoint,
                     const std::function<void(const TensorRecord&, const std::string&)>& fn) {
  visit_tensors(checkpoint, fn);
}
void for_each_tensor(Checkpoint& checkpoint,
                     const std::function<void(TensorRecord&, const std::string&)>& fn) {
  visit_tensors(checkpoint, fn);
}

bool Checkpoint::nominal() const {
  bool any = false, with_data = false;
  for_each_tensor(*this, [&](const TensorRecord& t, const std::string&) {
    any = true;
    with_data |= t.has_data();
  });
  return any && !with_data;
}

const TensorRecord* Checkpoint::find_parameter(std::string_view name) const {
  for (const auto* list : {&module.trainable, &module.frozen})
    for (const TensorRecord& t : *list)
      if (t.name == name) return &t;
  return nullptr;
}

TensorRecord* Checkpoint::find_parameter(std::string_view name) {
  return const_cast<TensorRecord*>(std::as_const(*this).find_parameter(name));
}

const OptimizerGroup* Checkpoint::find_group(std::string_view name) const {
  for (const OptimizerGroup& g : optimizer)
    if (g.name == name) return &g;
  return nullptr;
}

// Checks one tensor on its own; `where` names it in messages.
static Status validate_tensor(const TensorRecord& t, const std::string& where) {
  if (t.name.empty()) return invalid_argument(where + " has an empty name");
  if (!fixed_size_dtype(t.dtype))
    return invalid_argument(where + " has dtype " + dtype_name(t.dtype) +
                            ", which has no fixed element size (checkpoints hold numeric tensors)");
  if (t.shape.size() > kMaxRank)
    return invalid_argument(where + " has rank " + std::to_string(t.shape.size()) + " (at most " +
                            std::to_string(kMaxRank) + ")");
  int64_t count = 1;
  for (int64_t d : t.shape) {
    if (d < 0) return invalid_argument(where + " has a negative or unknown dimension: shape " + shape_string(t.shape));
    if (__builtin_mul_overflow(count, d, &count))
      return invalid_argument(where + " has too many elements: shape " + shape_string(t.shape));
  }
  if (t.has_data() && (t.data.dtype() != t.dtype || t.data.shape() != t.shape))
    return invalid_argument(where + " is declared " + dtype_name(t.dtype) + " " + shape_string(t.shape) +
                            " but its data is " + dtype_name(t.data.dtype()) + " " +
                            shape_string(t.data.shape()));
  if (t.has_data() && t.bytes() > 0 && t.data.data() == nullptr)
    return invalid_argument(where + " has a null data pointer");
  if (t.slice) {
    if (t.shape.size() != 1)
      return invalid_argument(where + " is a shard slice but not 1-D: shape " + shape_string(t.shape));
    int64_t full = element_count(t.slice->full_shape);
    for (int64_t d : t.slice->full_shape)
      if (d < 0) return invalid_argument(where + " has a negative dimension in its full shape");
    if (t.slice->offset < 0 || t.slice->offset > full || t.shape[0] > full - t.slice->offset)
      return invalid_argument(where + " slices elements [" + std::to_string(t.slice->offset) + ", " +
                              std::to_string(t.slice->offset + t.shape[0]) + ") of a tensor of " +
                              std::to_string(full) + " elements");
  }
  return {};
}

Status validate(const Checkpoint& c) {
  Status status;
  bool any_data = false, any_nominal = false;
  std::string first_nominal;
  for_each_tensor(c, [&](const TensorRecord& t, const std::string& where) {
    if (!status.ok()) return;
    status = validate_tensor(t, where);
    (t.has_data() ? any_data : any_nominal) = true;
    if (!t.has_data() && first_nominal.empty()) first_nominal = where;
  });
  ONYX_RETURN_IF_ERROR(status);
  if (any_data && any_nominal)
    return invalid_argument(first_nominal + " has no data while other tensors have: a checkpoint is "
                            "either complete or nominal");

  std::set<std::string_view> parameters, trainable;
  for (const TensorRecord& t : c.module.trainable) trainable.insert(t.name);
  for (const auto* list : {&c.module.trainable, &c.module.frozen})
    for (const TensorRecord& t : *list)
      if (!parameters.insert(t.name).second)
        return invalid_argument("parameter '" + t.name + "' appears more than once");

  std::set<std::string_view> groups;
  for (const OptimizerGroup& g : c.optimizer) {
    if (g.name.empty()) return invalid_argument("an optimizer group has an empty name");
    if (!groups.insert(g.name).second)
      return invalid_argument("optimizer group '" + g.name + "' appears more than once");
    std::set<std::string_view> params;
    for (const ParameterState& p : g.parameters) {
      if (!trainable.count(p.parameter))
        return invalid_argument("optimizer group '" + g.name + "' holds state for '" + p.parameter +
                                "', which is not a trainable parameter");
      if (!params.insert(p.parameter).second)
        return invalid_argument("optimizer group '" + g.name + "' holds state for '" + p.parameter +
                                "' more than once");
      std::set<std::string_view> states;
      for (const TensorRecord& t : p.tensors)
        if (!states.insert(t.name).second)
          return invalid_argument("optimizer group '" + g.name + "' has state '" + t.name + "' of '" +
                                  p.parameter + "' more than once");
    }
  }
  for (const auto& [name, value] : c.properties)
    if (name.empty()) return invalid_argument("a property has an empty name");
  if (c.metadata.shard_count == 0 || c.metadata.shard_index >= c.metadata.shard_count)
    return invalid_argument("shard index " + std::to_string(c.metadata.shard_index) + " is not below shard count " +
                            std::to_string(c.metadata.shard_count));
  return {};
}

void encode_header(const Header& h, std::byte out[kHeaderSize]) {
  std::memset(out, 0, kHeaderSize);
  auto put = [&](size_t offset, const auto& v) { std::memcpy(out + offset, &v, sizeof v); };
  std::memcpy(out, kMagic, sizeof kMagic);
  put(header_offset::kVersion, h.format_version);
  put(header_offset::kFlags, h.flags);
  put(header_offset::kTocOffset, h.toc_offset);
  put(header_offset::kTocSize, h.toc_size);
  put(header_offset::kFileSize, h.file_size);
  put(header_offset::kTocCrc, h.toc_crc32c);
  put(header_offset::kAlignment, h.data_alignment);
  put(header_offset::kHeaderCrc, crc32c({out, header_offset::kHeaderCrc}));
}

StatusOr<Header> decode_header(std::span<const std::byte> file) {
  if (file.size() < kHeaderSize) {
    if (file.size() >= sizeof kMagic && std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
      return invalid_argument("not an Onyx checkpoint (no ONYXCKPT magic)");
    return data_loss("truncated: " + std::to_string(file.size()) + " bytes, shorter than the " +
                     std::to_string(kHeaderSize) + "-byte header");
  }
  if (std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
    return invalid_argument("not an Onyx checkpoint (no ONYXCKPT magic)");
  auto get = [&](size_t offset, auto& v) { std::memcpy(&v, file.data() + offset, sizeof v); };
  Header h;
  uint32_t stored_crc = 0;
  get(header_offset::kVersion, h.format_version);
  get(header_offset::kHeaderCrc, stored_crc);
  uint32_t actual_crc = crc32c(file.first(header_offset::kHeaderCrc));
  // The version is checked before the checksum: a newer version may lay
  // its header out differently, and deserves the clearer message.
  if (h.format_version > kFormatVersion)
    return incompatible("format version " + std::to_string(h.format_version) +
                        " is newer than this reader's version " + std::to_string(kFormatVersion) +
                        " (it reads versions 1 to " + std::to_string(kFormatVersion) +
                        "): use a newer onyx" +
                        (stored_crc != actual_crc ? " (the header checksum also fails: the file may be corrupt)" : ""));
  if (stored_crc != actual_crc) return data_loss("header checksum mismatch: the header is corrupt");
  if (h.format_version == 0) return data_loss("format version 0 does not exist: the header is corrupt");
  get(header_offset::kFlags, h.flags);
  get(header_offset::kTocOffset, h.toc_offset);
  get(header_offset::kTocSize, h.toc_size);
  get(header_offset::kFileSize, h.file_size);
  get(header_offset::kTocCrc, h.toc_crc32c);
  get(header_offset::kAlignment, h.data_alignment);
  if (h.file_size != file.size())
    return data_loss("truncated or extended: the header records " + std::to_string(h.file_size) +
                     " bytes but the file has " + std::to_string(file.size()));
  if (h.flags & ~kKnownFlags) return data_loss("unknown header flags " + std::to_string(h.flags));
  if (h.data_alignment == 0 || (h.data_alignment & (h.data_alignment - 1)) != 0)
    return data_loss("data alignment " + std::to_string(h.data_alignment) + " is not a power of two");
  if (h.toc_offset < kHeaderSize || h.toc_offset > h.file_size || h.toc_size != h.file_size - h.toc_offset)
    return data_loss("the table of contents [" + std::to_string(h.toc_offset) + ", +" + std::to_string(h.toc_size) +
                     ") does not end the " + std::to_string(h.file_size) + "-byte file");
  return h;
}

}  // namespace onyx::checkpoint
