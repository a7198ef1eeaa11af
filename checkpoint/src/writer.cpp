// writer.cpp: save() and serialize(). Layout: the header (written last,
// once the table's place and checksum are known), each tensor's data at the
// next multiple of kDataAlignment, then the table of contents.
#include <algorithm>
#include <vector>

#include "byte_io.h"
#include "file_io.h"
#include "format.h"

namespace onyx::checkpoint {
namespace {

// Where one tensor's data went.
struct Blob {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint32_t crc = 0;
};

class TocEncoder {
 public:
  explicit TocEncoder(const std::vector<Blob>& blobs) : blobs_(blobs) {}

  std::vector<std::byte> encode(const Checkpoint& c) {
    w_.str(c.metadata.producer.empty() ? std::string(ONYX_CHECKPOINT_PRODUCER) : c.metadata.producer);
    w_.str(c.metadata.model_identity);
    w_.u32(c.metadata.shard_index);
    w_.u32(c.metadata.shard_count);
    tensors(c.module.trainable);
    tensors(c.module.frozen);
    w_.u32(uint32_t(c.optimizer.size()));
    for (const OptimizerGroup& g : c.optimizer) {
      w_.str(g.name);
      w_.i64(g.step);
      w_.f64(g.initial_learning_rate);
      w_.u32(uint32_t(g.parameters.size()));
      for (const ParameterState& p : g.parameters) {
        w_.str(p.parameter);
        tensors(p.tensors);
      }
    }
    w_.u32(uint32_t(c.properties.size()));
    for (const auto& [name, value] : c.properties) {
      w_.str(name);
      w_.u8(uint8_t(value.index()));
      if (auto* i = std::get_if<int64_t>(&value)) w_.i64(*i);
      if (auto* d = std::get_if<double>(&value)) w_.f64(*d);
      if (auto* s = std::get_if<std::string>(&value)) w_.str(*s);
    }
    return std::move(w_.bytes());
  }

 private:
  void tensors(const std::vector<TensorRecord>& list) {
    w_.u32(uint32_t(list.size()));
    for (const TensorRecord& t : list) {
      const Blob& blob = blobs_[next_++];
      w_.str(t.name);
      w_.i32(t.dtype);
      w_.u32(uint32_t(t.shape.size()));
      for (int64_t d : t.shape) w_.i64(d);
      w_.u8(t.slice ? 1 : 0);
      if (t.slice) {
        w_.u32(uint32_t(t.slice->full_shape.size()));
        for (int64_t d : t.slice->full_shape) w_.i64(d);
        w_.i64(t.slice->offset);
      }
      w_.u64(blob.offset);
      w_.u64(blob.bytes);
      w_.u32(blob.crc);
    }
  }

  const std::vector<Blob>& blobs_;
  size_t next_ = 0;
  ByteWriter w_;
};

// Checksums are computed chunk by chunk just before each chunk is written,
// while it is in cache.
constexpr size_t kChunk = size_t(4) << 20;

Status write_checkpoint(const Checkpoint& c, Sink& sink) {
  ONYX_RETURN_IF_ERROR(validate(c));
  static const std::byte zeros[kDataAlignment] = {};
  std::byte header_bytes[kHeaderSize] = {};
  ONYX_RETURN_IF_ERROR(sink.append(header_bytes));  // placeholder

  std::vector<Blob> blobs;
  uint64_t end = kHeaderSize;
  Status status;
  for_each_tensor(c, [&](const TensorRecord& t, const std::string& where) {
    Blob blob;
    if (!status.ok() || !t.has_data()) {
      blobs.push_back(blob);
      return;
    }
    blob.offset = align_up(end, kDataAlignment);
    blob.bytes = t.bytes();
    status = sink.append({zeros, size_t(blob.offset - end)});
    std::span<const std::byte> data(static_cast<const std::byte*>(t.data.data()), size_t(blob.bytes));
    for (size_t at = 0; status.ok() && at < data.size(); at += kChunk) {
      std::span<const std::byte> chunk = data.subspan(at, std::min(kChunk, data.size() - at));
      blob.crc = crc32c(chunk, blob.crc);
      status = sink.append(chunk);
    }
    if (!status.ok()) status = status.with_context("writing " + where);
    end = blob.offset + blob.bytes;
    blobs.push_back(blob);
  });
  ONYX_RETURN_IF_ERROR(status);

  std::vector<std::byte> toc = TocEncoder(blobs).encode(c);
  ONYX_RETURN_IF_ERROR(sink.append(toc));
  Header header;
  header.flags = c.nominal() ? kFlagNominal : 0;
  header.toc_offset = end;
  header.toc_size = toc.size();
  header.file_size = end + toc.size();
  header.toc_crc32c = crc32c(toc);
  encode_header(header, header_bytes);
  return sink.write_at(0, header_bytes);
}

class MemorySink : public Sink {
 public:
  Status append(std::span<const std::byte> bytes) override {
    out.insert(out.end(), bytes.begin(), bytes.end());
    return {};
  }
  Status write_at(uint64_t offset, std::span<const std::byte> bytes) override {
    std::copy(bytes.begin(), bytes.end(), out.begin() + std::ptrdiff_t(offset));
    return {};
  }
  std::vector<std::byte> out;
};

}  // namespace

Status save(const Checkpoint& checkpoint, const std::filesystem::path& path) {
  Status status = replace_file_atomically(path, [&](Sink& sink) { return write_checkpoint(checkpoint, sink); });
  return status.with_context("saving checkpoint '" + path.string() + "'");
}

StatusOr<std::vector<std::byte>> serialize(const Checkpoint& checkpoint) {
  MemorySink sink;
  ONYX_RETURN_IF_ERROR(write_checkpoint(checkpoint, sink).with_context("serializing checkpoint"));
  return std::move(sink.out);
}

}  // namespace onyx::checkpoint
