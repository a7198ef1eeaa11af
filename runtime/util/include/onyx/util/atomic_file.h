// atomic_file.h: replacing a file so that a crash leaves the old file or the
// new one, never a mix. The one implementation behind every file Onyx writes
// (checkpoints, exported models, tensors, loss curves, conformance reports).
//
// How: the bytes go to a new temporary file beside the target (the same
// folder, so the rename stays on one file system), which is flushed to disk
// and renamed over the target; then the folder is flushed so that the rename
// itself survives a crash.
//
// Thread-safety: concurrent writes to different targets are safe; concurrent
// writes to one target are safe too (each has its own temporary file), and
// the last rename wins. Nothing here throws except std::bad_alloc and what
// the caller's callback throws (the temporary file is removed either way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace onyx::util {

// The outcome of a file operation. util sits below the runtime's Status, so
// callers turn a failure into their own error type.
class WriteResult {
 public:
  WriteResult() = default;  // success
  // `message` names the file and says what failed; `system_error` is the
  // errno behind it (0 when the failure is the caller's own).
  static WriteResult failure(std::string message, int system_error = 0);

  bool ok() const { return message_.empty(); }
  const std::string& message() const { return message_; }
  int system_error() const { return system_error_; }

 private:
  std::string message_;
  int system_error_ = 0;
};

// The temporary file that write_file_atomically's callback fills. Valid only
// during the callback.
class TemporaryFile {
 public:
  TemporaryFile(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  WriteResult append(std::span<const std::byte> bytes);
  WriteResult append(std::string_view bytes);
  // Overwrites bytes already appended (e.g. a header completed last).
  WriteResult write_at(uint64_t offset, std::span<const std::byte> bytes);
  const std::filesystem::path& path() const { return path_; }

 private:
  int fd_;
  std::filesystem::path path_;
};

// Writes `bytes` as the new contents of `path`.
WriteResult write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Calls `write` with a new temporary file beside `path` (named
// "<name>.tmp-<pid>-<n>"), then flushes it, renames it over `path` and
// flushes the folder. On any failure, `write`'s included, the temporary file
// is removed and `path` is untouched; the result says which step failed.
WriteResult write_file_atomically(const std::filesystem::path& path,
                                  const std::function<WriteResult(TemporaryFile&)>& write);

}  // namespace onyx::util
