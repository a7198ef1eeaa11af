// plugin_library.h: finding and opening a plugin library of either kind
// (provider, optimizer) and checking what every Onyx entry struct allows a
// host to check before trusting it: the entry symbol, the magic naming the
// kind, struct_size, and the ABI range (negotiated to the newest version
// both sides speak). The kinds differ only in the PluginKind they pass.
//
// Errors name the file, and for version mismatches both ranges.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "core/status.h"

namespace onyx::runtime {

// What tells one kind of plugin from another.
struct PluginKind {
  const char* noun;           // "provider": used in messages
  const char* file_prefix;    // "libonyx_provider_": files are <prefix><name>.so
  const char* path_variable;  // "ONYX_PROVIDER_PATH": extra folders, ':'-separated
  const char* folder;         // "providers": <exe>/../lib/onyx/<folder>
  const char* entry_symbol;   // the one exported function returning the entry
  uint32_t magic;             // the entry's first field
  uint32_t min_entry_size;    // the entry's size in the oldest ABI the host reads
  uint32_t host_min_abi;      // the ABI range this host speaks
  uint32_t host_max_abi;
  // Calls the entry function (the symbol's address) through its declared
  // type and returns the entry; calling it as `const void* (*)()` would be
  // undefined (UBSan's function check says so). call_entry<Entry> below.
  const void* (*call_entry)(void* function);
};

template <typename Entry>
const void* call_entry(void* function) {
  return reinterpret_cast<const Entry* (*)()>(function)();
}

// True for a non-empty [A-Za-z0-9_]* name: plugin names, and the names
// inside an entry that the host turns into identifiers.
bool is_plain_name(const char* name);

std::string abi_version_string(uint32_t version);         // "1.0"
std::string abi_range_string(uint32_t low, uint32_t high);  // "1.0", or "1.0 to 1.7"

// The file of plugin `name_or_path`: a value containing '/' is a path (it
// must exist); otherwise a plain name ([A-Za-z0-9_]) looked up as
// <file_prefix><name>.so in the folders of search_dirs.h (`extra_dirs`,
// then kind.path_variable's, then beside the executable). NOT_FOUND
// names the file and lists the folders searched. Returns an absolute,
// normalized path.
StatusOr<std::string> find_plugin_file(const PluginKind& kind, const std::string& name_or_path,
                                       const std::vector<std::string>& extra_dirs);

// A loaded plugin library whose entry passed the checks. The entry is static
// data of the library: valid while this object (or one it was moved into)
// lives; destroying it unloads the library. Not thread-safe; movable.
class PluginLibrary {
 public:
  // dlopen (RTLD_NOW | RTLD_LOCAL), the entry symbol, magic, struct_size >=
  // kind.min_entry_size, a non-empty ABI range overlapping the host's.
  // NOT_FOUND: no such file. UNAVAILABLE: dlopen failed (the message carries
  // dlerror(), which names a missing dependency). INCOMPATIBLE: not a plugin
  // of this kind, a truncated entry, or ABI ranges that do not overlap.
  static StatusOr<PluginLibrary> open(const PluginKind& kind, const std::string& path);

  PluginLibrary(PluginLibrary&&) = default;
  PluginLibrary& operator=(PluginLibrary&&) = default;

  // The entry as the plugin's header declares it (OnyxPluginEntry,
  // OnyxOptimizerEntry): Entry must be the entry type of the kind opened.
  template <typename Entry>
  const Entry& entry() const {
    return *static_cast<const Entry*>(entry_);
  }
  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }        // the entry's name ("" if NULL)
  const std::string& version() const { return version_; }  // the entry's version ("" if NULL)
  uint32_t plugin_min_abi() const { return min_abi_; }
  uint32_t plugin_max_abi() const { return max_abi_; }
  uint32_t abi_version() const { return abi_version_; }  // negotiated: newest in both ranges
  // "provider 'cpu' (/abs/path/libonyx_provider_cpu.so)", for messages.
  std::string describe() const;

 private:
  PluginLibrary() = default;
  boost::dll::shared_library library_;
  const void* entry_ = nullptr;
  const char* noun_ = "";
  std::string path_, name_, version_;
  uint32_t min_abi_ = 0, max_abi_ = 0, abi_version_ = 0;
};

}  // namespace onyx::runtime
