// sdk/kernel_cache.hpp: the plugin's side of the compiled-partition cache
// (ABI 1.2, onyx_provider.h): BlobWriter, what Kernel::serialize writes its
// compiled form to, and BlobReader, the bounds-checked reader a provider's
// make_kernel_from_cache hook parses it back with.
//
// A provider opts in with two hooks (provider_table.hpp fills the three
// table entries only when the second one exists):
//   OnyxStatus* Kernel::serialize(BlobWriter&) const     on its kernel class
//   KernelResult make_kernel_from_cache(Device&, const OnyxGraphView&,
//       std::span<const uint32_t> nodes, BlobReader&)    on the provider
// and optionally std::string cache_compatibility(Device&) (default "").
// Blobs are host-verified (checksum, key) but still untrusted bytes: read
// them through BlobReader, whose reads fail instead of running past the end.
#pragma once

#include <onyx_provider.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "status.hpp"

namespace onyx::sdk {

// Appends bytes to the host's entry. Valid during kernel_serialize only.
class BlobWriter {
 public:
  BlobWriter(OnyxBlobWriteFn write, void* writer) : write_(write), writer_(writer) {}
  OnyxStatus* bytes(const void* data, size_t size) { return size ? write_(writer_, data, size) : nullptr; }
  // A trivially copyable value, as its bytes (the blob is read back by the
  // same plugin build on a compatible device: no byte-order conversion).
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  OnyxStatus* value(const T& v) {
    return bytes(&v, sizeof v);
  }
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  OnyxStatus* values(std::span<const T> v) {
    return bytes(v.data(), v.size_bytes());
  }

 private:
  OnyxBlobWriteFn write_;
  void* writer_;
};

// Reads a blob front to back; every read checks the bytes left first.
class BlobReader {
 public:
  explicit BlobReader(std::span<const std::byte> blob) : blob_(blob) {}
  size_t left() const { return blob_.size() - at_; }
  bool bytes(void* out, size_t size) {
    if (size > left()) return false;
    if (size) std::memcpy(out, blob_.data() + at_, size);
    at_ += size;
    return true;
  }
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  bool value(T* out) {
    return bytes(out, sizeof *out);
  }
  // `count` values; fails (reading nothing) when the blob has fewer bytes.
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  bool values(T* out, size_t count) {
    if (count > left() / sizeof(T)) return false;
    return bytes(out, count * sizeof(T));
  }

 private:
  std::span<const std::byte> blob_;
  size_t at_ = 0;
};

}  // namespace onyx::sdk
