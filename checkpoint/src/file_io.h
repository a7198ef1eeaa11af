// file_io.h: the checkpoint library's only contact with the file system:
// atomic replacement of a file, and reading or privately mapping one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>

#include "onyx/checkpoint.h"  // the runtime base types, through the library's vocabulary

namespace onyx::checkpoint {

// Where the writer puts bytes: a file or a memory buffer.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status append(std::span<const std::byte> bytes) = 0;
  // Overwrites bytes already appended (the header, once the rest is known).
  virtual Status write_at(uint64_t offset, std::span<const std::byte> bytes) = 0;
};

// Calls `write` with a sink on a new temporary file beside `path`, then
// flushes it to disk, renames it over `path` and flushes the folder. On any
// failure the temporary file is removed and `path` is untouched.
Status replace_file_atomically(const std::filesystem::path& path, const std::function<Status(Sink&)>& write);

// A file's bytes in memory (64-byte aligned) or privately mapped
// (copy-on-write, so writes through tensors never reach the file). `owner`
// keeps them alive.
struct FileBytes {
  std::byte* data = nullptr;
  size_t size = 0;
  std::shared_ptr<void> owner;
};
StatusOr<FileBytes> read_file(const std::filesystem::path& path);
StatusOr<FileBytes> map_file(const std::filesystem::path& path);
// A 64-byte aligned copy of `bytes`.
FileBytes copy_bytes(std::span<const std::byte> bytes);

}  // namespace onyx::checkpoint
