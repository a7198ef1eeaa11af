#include "session/compiled_cache.h"

#include <onyx/util/atomic_file.h>
#include <onyx/util/read_file.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>

#include "core/abi_status.h"
#include "core/step_observer.h"
#include "session/compiled_cache_key.h"
#include "session/device.h"

namespace onyx::runtime {

namespace fs = std::filesystem;

namespace {

void put_u64(std::string& bytes, size_t at, uint64_t v) {
  for (size_t k = 0; k < 8; ++k) bytes[at + k] = char((v >> (8 * k)) & 0xFF);
}
uint64_t get_u64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  for (size_t k = 0; k < 8; ++k) v |= uint64_t(static_cast<unsigned char>(bytes[at + k])) << (8 * k);
  return v;
}

// "<plugin>-<hash>.onyxkernel", the plugin's name kept to letters, digits, '-' and '_'.
std::string entry_file_name(const std::string& plugin, uint64_t key_hash) {
  std::string name;
  for (char c : plugin.substr(0, 64))
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, key_hash);
  return name + "-" + hash + ".onyxkernel";
}

// The first line where two key texts differ, as "'stored' instead of 'wanted'".
std::string first_difference(const std::string& stored, const std::string& wanted) {
  size_t at = 0;
  while (at < stored.size() && at < wanted.size() && stored[at] == wanted[at]) ++at;
  auto line_at = [at](const std::string& text) {
    const size_t from = std::min(at, text.size());
    const size_t newline = from == 0 ? std::string::npos : text.rfind('\n', from - 1);
    const size_t begin = newline == std::string::npos ? 0 : newline + 1;
    const size_t end = text.find('\n', from);
    std::string line = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    return line.size() > 160 ? line.substr(0, 160) + "..." : line;
  };
  return "'" + line_at(stored) + "' instead of '" + line_at(wanted) + "'";
}

// The host's OnyxBlobWriteFn target: the entry being assembled.
struct EntrySink {
  std::string bytes;
  size_t blob_start = 0;
};

OnyxStatus* append_to_entry(void* writer, const void* data, size_t size) noexcept {
  EntrySink* sink = static_cast<EntrySink*>(writer);
  if (!sink) return make_abi_status(invalid_argument("blob write: writer is NULL"));
  if (size && !data) return make_abi_status(invalid_argument("blob write: bytes is NULL"));
  const uint64_t held = sink->bytes.size() - sink->blob_start;
  if (size > kMaxCompiledBlobBytes - held)
    return make_abi_status(Status(ONYX_STATUS_OUT_OF_MEMORY, "a serialized kernel is limited to " +
                                                                 std::to_string(kMaxCompiledBlobBytes) + " bytes"));
  try {
    sink->bytes.append(static_cast<const char*>(data), size);
  } catch (const std::bad_alloc&) {
    return make_abi_status(Status(ONYX_STATUS_OUT_OF_MEMORY, "out of memory holding a serialized kernel"));
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> CompiledCache::read_entry(const fs::path& path, const std::string& key,
                                                     std::string* why) const {
  why->clear();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return std::nullopt;  // a miss, not a rejection
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) {
    *why = "cannot read its size: " + ec.message();
    return std::nullopt;
  }
  if (size < kCompiledCacheHeaderBytes) {
    *why = "truncated: " + std::to_string(size) + " bytes, shorter than the " +
           std::to_string(kCompiledCacheHeaderBytes) + "-byte header";
    return std::nullopt;
  }
  if (size > kCompiledCacheHeaderBytes + kMaxCompiledKeyBytes + kMaxCompiledBlobBytes) {
    *why = std::to_string(size) + " bytes, larger than any entry this host writes";
    return std::nullopt;
  }
  std::string bytes;
  if (std::string failed = util::read_regular_file(path, &bytes); !failed.empty()) {
    *why = failed;
    return std::nullopt;
  }
  if (bytes.size() < kCompiledCacheHeaderBytes) {
    *why = "truncated while it was read";
    return std::nullopt;
  }
  if (std::memcmp(bytes.data(), kCompiledCacheMagic, sizeof kCompiledCacheMagic) != 0) {
    *why = "not a compiled-kernel entry (no ONYXKRNL magic)";
    return std::nullopt;
  }
  const uint32_t format = uint32_t(get_u64(bytes, 8) & 0xFFFFFFFFu);
  if (format != kCompiledCacheFormat) {
    *why = "format version " + std::to_string(format) + ", this host reads version " +
           std::to_string(kCompiledCacheFormat);
    return std::nullopt;
  }
  const uint64_t key_size = get_u64(bytes, 16), blob_size = get_u64(bytes, 24), blob_hash = get_u64(bytes, 32);
  if (key_size > kMaxCompiledKeyBytes || blob_size > kMaxCompiledBlobBytes ||
      kCompiledCacheHeaderBytes + key_size + blob_size != bytes.size()) {
    *why = "its header declares a " + std::to_string(key_size) + "-byte key and a " + std::to_string(blob_size) +
           "-byte blob, but the file has " + std::to_string(bytes.size()) + " bytes (truncated or corrupt)";
    return std::nullopt;
  }
  const std::string stored_key = bytes.substr(kCompiledCacheHeaderBytes, key_size);
  if (stored_key != key) {
    *why = "it was made for another key (plugin build, device, compatibility or graph): " +
           first_difference(stored_key, key);
    return std::nullopt;
  }
  std::string blob = bytes.substr(kCompiledCacheHeaderBytes + key_size);
  if (hash_bytes(blob.data(), blob.size()) != blob_hash) {
    *why = "its " + std::to_string(blob_size) + "-byte blob does not match its checksum (corrupt)";
    return std::nullopt;
  }
  return blob;
}

std::string CompiledCache::store(const Device& device, OnyxKernel* kernel, const fs::path& path,
                                 const std::string& key, bool* unimplemented) {
  *unimplemented = false;
  EntrySink sink;
  sink.bytes.assign(kCompiledCacheHeaderBytes, '\0');
  sink.bytes += key;
  sink.blob_start = sink.bytes.size();
  Status serialized;
  {
    ProviderActivity activity(device.label, "serializing a compiled kernel");
    serialized = take_status(device.provider->api().kernel_serialize(kernel, append_to_entry, &sink));
  }
  if (!serialized.ok()) {
    *unimplemented = serialized.code() == ONYX_STATUS_UNIMPLEMENTED;
    return "kernel_serialize failed: " + serialized.message();
  }
  std::memcpy(sink.bytes.data(), kCompiledCacheMagic, sizeof kCompiledCacheMagic);
  put_u64(sink.bytes, 8, kCompiledCacheFormat);  // and the 4 zero bytes after it
  put_u64(sink.bytes, 16, key.size());
  const uint64_t blob_size = sink.bytes.size() - sink.blob_start;
  put_u64(sink.bytes, 24, blob_size);
  put_u64(sink.bytes, 32, hash_bytes(sink.bytes.data() + sink.blob_start, blob_size));
  std::error_code ec;
  fs::create_directories(folder_, ec);
  if (ec) return "cannot create the folder '" + folder_.string() + "': " + ec.message();
  util::WriteResult written = util::write_file_atomically(path, sink.bytes);
  return written.ok() ? std::string() : written.message();
}

Status CompiledCache::create_kernel(const Device& device, const OnyxGraphView& view, std::span<const uint32_t> nodes,
                                    const std::string& step, OnyxKernel** out, CompiledCacheRecord* record) {
  *out = nullptr;
  record->step = step;
  record->device = device.label;
  const OnyxProviderApi& api = device.provider->api();
  auto compile = [&] {
    ProviderActivity activity(device.label, "creating the kernel of " + step);
    return take_status(api.kernel_create(device.handle, &view, nodes.data(), nodes.size(), out));
  };
  if (!device.provider->caches_kernels()) {
    record->outcome = "not cached";
    record->reason = "provider '" + device.label + "' keeps no compiled kernels (ABI 1.2 cache functions)";
    return compile();
  }
  const std::optional<CompiledCacheKey> keyed = compiled_cache_key(device, view, nodes);
  if (!keyed) {
    record->outcome = "not cached";
    record->reason = "the group has a subgraph attribute or a constant outside host memory";
    return compile();
  }
  const std::string* key = &keyed->text;
  const fs::path path = folder_ / entry_file_name(device.provider->name(), keyed->file_hash);
  record->file = path.string();
  std::string rejected;
  if (std::optional<std::string> blob = read_entry(path, *key, &rejected)) {
    OnyxKernel* kernel = nullptr;
    Status loaded;
    {
      ProviderActivity activity(device.label, "loading the compiled kernel of " + step);
      loaded = take_status(api.kernel_create_from_cache(device.handle, &view, nodes.data(), nodes.size(),
                                                        blob->data(), blob->size(), &kernel));
    }
    if (loaded.ok() && kernel) {
      *out = kernel;
      record->outcome = "hit";
      return Status();
    }
    if (kernel) api.kernel_destroy(kernel);  // a status and a kernel: the status wins
    rejected = loaded.ok() ? "the plugin made no kernel from it"
                           : std::string("the plugin refused it (") + status_code_name(loaded.code()) +
                                 "): " + loaded.message();
  }
  if (!rejected.empty())
    logger_.warning("compiled cache: rejected '" + path.string() + "' for " + step + " on " + device.label + ": " +
                    rejected + "; compiling it again");
  ONYX_RETURN_IF_ERROR(compile());
  if (!*out) return Status();  // no kernel to serialize: the session refuses the plugin's answer
  bool unimplemented = false;
  const std::string not_stored = store(device, *out, path, *key, &unimplemented);
  if (not_stored.empty()) {
    record->outcome = rejected.empty() ? "stored" : "rebuilt";
    record->reason = rejected;
  } else if (unimplemented) {
    record->outcome = "not cached";
    record->reason = not_stored;
  } else {
    record->outcome = "not stored";
    record->reason = rejected.empty() ? not_stored : rejected + "; then not stored: " + not_stored;
    if (!warned_unwritable_)
      logger_.warning("compiled cache: cannot store '" + path.string() + "': " + not_stored +
                      "; this session goes on without storing, and later ones will compile again");
    warned_unwritable_ = true;
  }
  return Status();
}

}  // namespace onyx::runtime
