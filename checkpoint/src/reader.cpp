// reader.cpp: load(), load_from_memory() and verify_data(). Nothing read from
// the file is trusted before it is checked: the header and table checksums
// first, then every tensor's dtype, shape, offset and length against the
// file, and (when asked) every tensor's checksum.
#include <algorithm>
#include <limits>
#include <tuple>
#include <vector>

#include "byte_io.h"
#include "file_io.h"
#include "format.h"

namespace onyx::checkpoint {
namespace {

bool fixed_size_dtype(int32_t dtype) {
  return dtype_size(dtype) > 0 || dtype == ONYX_DTYPE_INT4 || dtype == ONYX_DTYPE_UINT4 ||
         dtype == ONYX_DTYPE_FLOAT4E2M1;
}

// The smallest encodings, to bound counts read from the table.
constexpr size_t kMinTensorBytes = 4 + 4 + 4 + 1 + 8 + 8 + 4;
constexpr size_t kMinGroupBytes = 4 + 8 + 8 + 4;
constexpr size_t kMinParameterStateBytes = 4 + 4;
constexpr size_t kMinPropertyBytes = 4 + 1 + 8;

class TocDecoder {
 public:
  TocDecoder(const FileBytes& file, const Header& header)
      : file_(file), header_(header), r_({file.data + header.toc_offset, size_t(header.toc_size)}) {}

  StatusOr<Checkpoint> decode() {
    Checkpoint c;
    c.metadata.format_version = header_.format_version;
    c.metadata.producer = r_.str();
    c.metadata.model_identity = r_.str();
    c.metadata.shard_index = r_.u32();
    c.metadata.shard_count = r_.u32();
    ONYX_RETURN_IF_ERROR(tensors(c.module.trainable, "trainable parameter"));
    ONYX_RETURN_IF_ERROR(tensors(c.module.frozen, "frozen parameter"));
    uint32_t groups = r_.count(kMinGroupBytes);
    for (uint32_t g = 0; g < groups && r_.ok(); ++g) {
      OptimizerGroup& group = c.optimizer.emplace_back();
      group.name = r_.str();
      group.step = r_.i64();
      group.initial_learning_rate = r_.f64();
      uint32_t params = r_.count(kMinParameterStateBytes);
      for (uint32_t p = 0; p < params && r_.ok(); ++p) {
        ParameterState& state = group.parameters.emplace_back();
        state.parameter = r_.str();
        ONYX_RETURN_IF_ERROR(tensors(state.tensors, "optimizer group '" + group.name + "' state of '" +
                                                        state.parameter + "'"));
      }
    }
    uint32_t properties = r_.count(kMinPropertyBytes);
    for (uint32_t p = 0; p < properties && r_.ok(); ++p) {
      std::string name = r_.str();
      uint8_t kind = r_.u8();
      if (kind == 0) c.properties[name] = r_.i64();
      else if (kind == 1) c.properties[name] = r_.f64();
      else if (kind == 2) c.properties[name] = r_.str();
      else if (r_.ok()) return corrupt("property '" + name + "' has unknown kind " + std::to_string(kind));
    }
    if (!r_.ok()) return corrupt("the table of contents ends early (at byte " + std::to_string(r_.position()) + ")");
    if (r_.remaining() != 0) return corrupt(std::to_string(r_.remaining()) + " unread bytes end the table of contents");
    // Each tensor owns its bytes: two records that point into the same range
    // (a small one inside a big one) would alias, and a write to one change the other.
    std::sort(ranges_.begin(), ranges_.end());
    for (size_t k = 1; k < ranges_.size(); ++k) {
      const auto& [offset, bytes, where] = ranges_[k];
      const auto& [prev_offset, prev_bytes, prev_where] = ranges_[k - 1];
      if (bytes > 0 && prev_bytes > 0 && offset < prev_offset + prev_bytes)
        return corrupt(prev_where + " and " + where + " share data bytes [" + std::to_string(offset) + ", " +
                       std::to_string(std::min(offset + bytes, prev_offset + prev_bytes)) + ")");
    }
    bool nominal = header_.flags & kFlagNominal;
    if (nominal != c.nominal())
      return corrupt(nominal ? "the header says nominal but tensors carry data"
                             : "the header says complete but no tensor carries data");
    Status status = validate(c);
    if (!status.ok()) return corrupt(status.message());
    return c;
  }

 private:
  static Status corrupt(const std::string& message) { return data_loss(message); }

  Status tensors(std::vector<TensorRecord>& list, const std::string& kind) {
    uint32_t n = r_.count(kMinTensorBytes);
    list.reserve(n);
    for (uint32_t k = 0; k < n && r_.ok(); ++k) ONYX_RETURN_IF_ERROR(tensor(list.emplace_back(), kind));
    return {};
  }

  Status dims(Shape& shape, const std::string& where) {
    uint32_t rank = r_.u32();
    if (r_.ok() && rank > kMaxRank) return corrupt(where + " has rank " + std::to_string(rank));
    for (uint32_t d = 0; d < rank && r_.ok(); ++d) shape.push_back(r_.i64());
    return {};
  }

  Status tensor(TensorRecord& t, const std::string& kind) {
    t.name = r_.str();
    std::string where = kind + " '" + t.name + "'";
    t.dtype = r_.i32();
    ONYX_RETURN_IF_ERROR(dims(t.shape, where));
    if (r_.u8()) {
      ShardSlice& slice = t.slice.emplace();
      ONYX_RETURN_IF_ERROR(dims(slice.full_shape, where));
      slice.offset = r_.i64();
    }
    uint64_t offset = r_.u64(), bytes = r_.u64();
    uint32_t crc = r_.u32();
    if (!r_.ok()) return {};  // reported once by decode()
    if (!fixed_size_dtype(t.dtype)) return corrupt(where + " has unknown dtype " + std::to_string(t.dtype));
    if (!runtime::checked_storage_bytes(t.dtype, t.shape))
      return corrupt(where + " has an invalid shape " + shape_string(t.shape) + " (a negative dim, or its " +
                     dtype_name(t.dtype) + " element count or bytes overflow)");
    if (t.slice && !runtime::checked_storage_bytes(t.dtype, t.slice->full_shape))
      return corrupt(where + " is a slice of an invalid shape " + shape_string(t.slice->full_shape));
    if (header_.flags & kFlagNominal) {
      if (offset != 0 || bytes != 0) return corrupt(where + " has data in a nominal checkpoint");
      return {};
    }
    if (bytes != t.bytes())
      return corrupt(where + " records " + std::to_string(bytes) + " data bytes but " + dtype_name(t.dtype) + " " +
                     shape_string(t.shape) + " needs " + std::to_string(t.bytes()));
    if (offset < kHeaderSize || offset % header_.data_alignment != 0 || offset > header_.toc_offset ||
        bytes > header_.toc_offset - offset)
      return corrupt(where + " has data at [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                     ") outside the data section [" + std::to_string(kHeaderSize) + ", " +
                     std::to_string(header_.toc_offset) + ") or misaligned");
    ranges_.emplace_back(offset, bytes, where);
    t.data = Tensor::wrap(t.dtype, t.shape, file_.data + offset, file_.owner);
    t.checksum = crc;
    return {};
  }

  const FileBytes& file_;
  const Header& header_;
  ByteReader r_;
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges_;  // data offset, bytes, record
};

StatusOr<Checkpoint> parse(const FileBytes& file, bool verify) {
  std::span<const std::byte> bytes(file.data, file.size);
  ONYX_ASSIGN_OR_RETURN(Header header, decode_header(bytes));
  if (crc32c(bytes.subspan(header.toc_offset, header.toc_size)) != header.toc_crc32c)
    return data_loss("table of contents checksum mismatch: the table is corrupt");
  ONYX_ASSIGN_OR_RETURN(Checkpoint c, TocDecoder(file, header).decode());
  if (verify) ONYX_RETURN_IF_ERROR(verify_data(c));
  return c;
}

}  // namespace

StatusOr<Checkpoint> load(const std::filesystem::path& path, const LoadOptions& options) {
  StatusOr<FileBytes> file = options.mode == LoadMode::kMemoryMap ? map_file(path) : read_file(path);
  if (!file.ok()) return file.status().with_context("loading checkpoint");
  StatusOr<Checkpoint> c = parse(*file, options.verify_data);
  if (!c.ok()) return c.status().with_context("checkpoint '" + path.string() + "'");
  return c;
}

StatusOr<Checkpoint> load_from_memory(std::span<const std::byte> bytes, bool verify) {
  StatusOr<Checkpoint> c = parse(copy_bytes(bytes), verify);
  if (!c.ok()) return c.status().with_context("checkpoint in memory");
  return c;
}

Status verify_data(const Checkpoint& checkpoint) {
  Status status;
  for_each_tensor(checkpoint, [&](const TensorRecord& t, const std::string& where) {
    if (!status.ok() || !t.checksum || !t.has_data()) return;
    uint32_t actual = crc32c({static_cast<const std::byte*>(t.data.data()), t.bytes()});
    if (actual != *t.checksum)
      status = data_loss(where + ": data checksum mismatch (stored " + std::to_string(*t.checksum) +
                         ", computed " + std::to_string(actual) + "): the data is corrupt");
  });
  return status;
}

}  // namespace onyx::checkpoint
