// compiled_cache_key.h: what identifies a compiled kernel in the
// compiled-partition cache (ABI 1.2, onyx_provider.h): a canonical text of
// the plugin, its device and the group of nodes, and the 64-bit hash the
// cache's file names and checksums use.
//
// The text names everything a plugin may compile from: the plugin's name,
// version and negotiated ABI; the device's properties and open options; the
// plugin's compatibility string; per node of the group its op type, domain,
// opset and attributes (tensor attributes by a hash of their bytes); per
// value the group reads or writes its element type, shape, flags and, for a
// constant, its byte size and a hash of its bytes. Values are numbered in
// order of first use, so names do not matter but the wiring does. A stored
// entry keeps the whole text and is used only when it is equal, so a hash
// collision costs a recompilation, never a wrong kernel.
// Thread-safety: reentrant.
#pragma once

#include <onyx_provider.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace onyx::runtime {

struct Device;

// A 64-bit hash of `size` bytes (not cryptographic: it detects accidents,
// corruption and changed weights, not an attacker).
uint64_t hash_bytes(const void* data, size_t size);

struct CompiledCacheKey {
  std::string text;  // the whole key, stored in the entry and compared
  // Names the entry's file: a hash of the key less the plugin's version,
  // ABI and compatibility string, so that after a plugin or driver update
  // the old entry is found, rejected with the line that changed, and
  // replaced, instead of lingering beside a new one.
  uint64_t file_hash = 0;
};

// The key of nodes `nodes` of `view` compiled on `device`, or nullopt when
// the group cannot be keyed (a subgraph attribute, a constant that is not in
// host memory): such a group is always compiled.
std::optional<CompiledCacheKey> compiled_cache_key(const Device& device, const OnyxGraphView& view,
                                                   std::span<const uint32_t> nodes);

}  // namespace onyx::runtime
