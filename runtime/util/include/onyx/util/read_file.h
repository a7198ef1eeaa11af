// read_file.h: the one way to read a whole file that a stranger may have
// named (a model's artifacts, an optimizer model, a tensor file): it refuses
// what is not a regular file without blocking on it (a FIFO's open would wait
// forever for a writer), deciding on the opened descriptor, not on a path
// that could change between a check and the open.
// Thread-safety: reentrant.
#pragma once

#include <filesystem>
#include <string>

namespace onyx::util {

// Reads `path` into *bytes. Returns "" on success, else a sentence naming the
// file and what failed ("'x' is not a regular file", "cannot open 'x': ...").
// `errno_out` (may be null) receives the errno behind a failure, 0 otherwise.
std::string read_regular_file(const std::filesystem::path& path, std::string* bytes, int* errno_out = nullptr);

}  // namespace onyx::util
