// format.h: the fixed layout of a checkpoint file (docs/checkpoint-format.md):
//   header (64 bytes) | tensor data, each blob aligned to kDataAlignment | table of contents
// The header says where the table is; the table says where each tensor is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "onyx/checkpoint.h"

namespace onyx::checkpoint {

inline constexpr char kMagic[8] = {'O', 'N', 'Y', 'X', 'C', 'K', 'P', 'T'};
inline constexpr size_t kHeaderSize = 64;
inline constexpr uint32_t kDataAlignment = 64;
inline constexpr uint32_t kFlagNominal = 1u << 0;
inline constexpr uint32_t kKnownFlags = kFlagNominal;
inline constexpr uint32_t kMaxRank = 64;

struct Header {
  uint32_t format_version = kFormatVersion;
  uint32_t flags = 0;
  uint64_t toc_offset = 0;
  uint64_t toc_size = 0;
  uint64_t file_size = 0;
  uint32_t toc_crc32c = 0;
  uint32_t data_alignment = kDataAlignment;
};

// Header fields at fixed byte offsets (the header checksum covers bytes [0, 60)).
namespace header_offset {
inline constexpr size_t kVersion = 8, kFlags = 12, kTocOffset = 16, kTocSize = 24, kFileSize = 32,
                        kTocCrc = 40, kAlignment = 44, kHeaderCrc = 60;
}

void encode_header(const Header& header, std::byte out[kHeaderSize]);
// Checks magic, version (newer than known: INCOMPATIBLE naming both), the
// header checksum and the fields' consistency with `file_size`.
StatusOr<Header> decode_header(std::span<const std::byte> file);

inline uint64_t align_up(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// Every tensor of a checkpoint in file order (trainable, frozen, then each
// group's per-parameter state), with a description for messages such as
// "trainable parameter 'fc1.weight'".
void for_each_tensor(const Checkpoint& checkpoint,
                     const std::function<void(const TensorRecord&, const std::string& where)>& fn);
void for_each_tensor(Checkpoint& checkpoint,
                     const std::function<void(TensorRecord&, const std::string& where)>& fn);

}  // namespace onyx::checkpoint
