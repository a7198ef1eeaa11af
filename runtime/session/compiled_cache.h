// compiled_cache.h: the compiled-partition cache (ABI 1.2, onyx_provider.h).
//
// With a cache folder set (SessionOptions::compiled_cache_dir), a kernel step
// on a provider that caches kernels (Provider::caches_kernels) is made from
// the folder's entry for its key (session/compiled_cache_key.h) with
// kernel_create_from_cache; without a usable entry it is compiled with
// kernel_create, serialized with kernel_serialize and stored.
//
// An entry is one file, "<plugin>-<16 hex digits>.onyxkernel" (the hash of
// the key less the plugin's version and compatibility string: an update
// finds, rejects and replaces the old entry):
//   bytes  0..7   magic "ONYXKRNL"
//          8..11  format version (uint32, little-endian), kCompiledCacheFormat
//         12..15  zero
//         16..23  key size, 24..31 blob size, 32..39 the blob's hash (uint64)
//         40..    the key text, then the plugin's blob
// written atomically (onyx/util/atomic_file.h), so a reader sees an old entry
// or a new one, never a mix. A file that is short, long, of another format,
// for another key (a hash collision, another plugin build) or whose blob's
// hash differs is rejected with one warning naming the file and why, and so is
// a blob the plugin refuses; the kernel is then compiled and the entry
// replaced. A folder that cannot be created or written costs one warning per
// session and the session goes on without storing.
// Thread-safety: one CompiledCache per session creation (not shared); several
// sessions may use one folder at once (the last rename wins).
#pragma once

#include <onyx_provider.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "core/log.h"
#include "core/status.h"
#include "session/partition.h"

namespace onyx::runtime {

struct Device;

inline constexpr uint32_t kCompiledCacheFormat = 1;
inline constexpr char kCompiledCacheMagic[8] = {'O', 'N', 'Y', 'X', 'K', 'R', 'N', 'L'};
inline constexpr size_t kCompiledCacheHeaderBytes = 40;
// Bounds checked before anything is allocated: a key text this long is not
// one the host wrote, and no kernel's blob is stored past the blob bound.
inline constexpr uint64_t kMaxCompiledKeyBytes = uint64_t(64) << 20;
inline constexpr uint64_t kMaxCompiledBlobBytes = uint64_t(4) << 30;

class CompiledCache {
 public:
  CompiledCache(std::filesystem::path folder, const Logger& logger) : folder_(std::move(folder)), logger_(logger) {}

  // The kernel of `nodes` of `view` on `device` (a step named `step`), from
  // the cache or compiled, with what happened in *record. Fails only when
  // kernel_create fails; cache trouble is logged and recorded.
  Status create_kernel(const Device& device, const OnyxGraphView& view, std::span<const uint32_t> nodes,
                       const std::string& step, OnyxKernel** out, CompiledCacheRecord* record);

 private:
  // The blob of the entry at `path` for `key`; nullopt with *why set when the
  // file is absent (why empty) or rejected.
  std::optional<std::string> read_entry(const std::filesystem::path& path, const std::string& key,
                                        std::string* why) const;
  // Serializes `kernel` and writes its entry; "" or why not.
  std::string store(const Device& device, OnyxKernel* kernel, const std::filesystem::path& path,
                    const std::string& key, bool* unimplemented);

  std::filesystem::path folder_;
  const Logger& logger_;
  bool warned_unwritable_ = false;
};

}  // namespace onyx::runtime
