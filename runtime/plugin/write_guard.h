// write_guard.h: host structs a plugin fills (device properties, node
// claims, output memory info) are followed by guard bytes that the host
// checks after the call. A plugin built with a larger struct than the
// struct_size it was handed, or one that writes one entry past an array,
// would otherwise corrupt the host's memory silently and crash it later, far
// from the cause; with the guard the call fails at once, naming the plugin.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/status.h"

namespace onyx::runtime {

// `count` value-initialized T in one buffer with kGuardBytes of a known
// pattern after them. T must be trivially copyable (the ABI's structs are).
template <typename T>
class WriteGuarded {
 public:
  static_assert(std::is_trivially_copyable_v<T>);
  static constexpr size_t kGuardBytes = 256;
  static constexpr unsigned char kPattern = 0xA5;

  explicit WriteGuarded(size_t count = 1)
      : count_(count), bytes_(std::make_unique<unsigned char[]>(count * sizeof(T) + kGuardBytes)) {
    for (size_t k = 0; k < count; ++k) new (bytes_.get() + k * sizeof(T)) T{};
    std::memset(bytes_.get() + count * sizeof(T), kPattern, kGuardBytes);
  }

  T* data() { return reinterpret_cast<T*>(bytes_.get()); }
  T& operator[](size_t k) { return data()[k]; }
  size_t size() const { return count_; }

  // OK when the guard bytes are untouched; otherwise an error naming `who`
  // (the plugin) and `what` (the call and struct), since the plugin wrote
  // past what it was handed. Memory past the guard may be damaged too: the
  // process should not trust this plugin again.
  Status check(const std::string& who, const std::string& what) const {
    const unsigned char* guard = bytes_.get() + count_ * sizeof(T);
    size_t written = 0;
    for (size_t k = 0; k < kGuardBytes; ++k)
      if (guard[k] != kPattern) written = k + 1;
    if (written == 0) return Status();
    return internal_error(who + " wrote past the end of " + what + " (" + std::to_string(count_ * sizeof(T)) +
                          " bytes handed to it; at least " + std::to_string(written) +
                          " more written): it was built against a different ABI header, or it has a bug");
  }

 private:
  size_t count_;
  std::unique_ptr<unsigned char[]> bytes_;
};

}  // namespace onyx::runtime
