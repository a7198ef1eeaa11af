#include "plugin/plugin_library.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <onyx_optimizer.h>
#include <onyx_provider.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "plugin/search_dirs.h"

namespace onyx::runtime {
namespace fs = std::filesystem;

namespace {

// The fields every entry struct starts with (the rule in onyx_provider.h),
// read without knowing which kind of entry it is.
struct EntryHead {
  uint32_t magic;
  uint32_t struct_size;
  uint32_t min_abi_version;
  uint32_t max_abi_version;
  const char* name;
  const char* version;
};

template <typename Entry>
constexpr bool starts_with_entry_head() {
  return offsetof(Entry, magic) == offsetof(EntryHead, magic) &&
         offsetof(Entry, struct_size) == offsetof(EntryHead, struct_size) &&
         offsetof(Entry, min_abi_version) == offsetof(EntryHead, min_abi_version) &&
         offsetof(Entry, max_abi_version) == offsetof(EntryHead, max_abi_version) &&
         offsetof(Entry, name) == offsetof(EntryHead, name) &&
         offsetof(Entry, version) == offsetof(EntryHead, version) && sizeof(Entry) >= sizeof(EntryHead);
}
static_assert(starts_with_entry_head<OnyxPluginEntry>());
static_assert(starts_with_entry_head<OnyxOptimizerEntry>());

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", v);
  return text;
}

std::string absolute_path(const std::string& path) { return fs::absolute(path).lexically_normal().string(); }

}  // namespace

bool is_plain_name(const char* name) {
  if (!name || !*name) return false;
  for (; *name; ++name) {
    char c = *name;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

std::string abi_version_string(uint32_t v) {
  return std::to_string(ONYX_ABI_VERSION_GET_MAJOR(v)) + "." + std::to_string(ONYX_ABI_VERSION_GET_MINOR(v));
}

std::string abi_range_string(uint32_t low, uint32_t high) {
  return low == high ? abi_version_string(low) : abi_version_string(low) + " to " + abi_version_string(high);
}

StatusOr<std::string> find_plugin_file(const PluginKind& kind, const std::string& name_or_path,
                                       const std::vector<std::string>& extra_dirs) {
  if (name_or_path.find('/') != std::string::npos) {
    std::error_code ec;
    if (!fs::exists(name_or_path, ec))
      return not_found(std::string(kind.noun) + " plugin " + name_or_path + ": no such file");
    return absolute_path(name_or_path);
  }
  if (!is_plain_name(name_or_path.c_str()))
    return invalid_argument(std::string(kind.noun) + " name '" + name_or_path +
                            "' is neither a path nor a plain name ([A-Za-z0-9_])");
  const std::string file = kind.file_prefix + name_or_path + ".so";
  const std::vector<std::string> dirs = plugin_search_dirs(extra_dirs, kind.path_variable, kind.folder);
  for (const std::string& dir : dirs) {
    std::error_code ec;
    fs::path candidate = fs::path(dir) / file;
    if (fs::is_regular_file(candidate, ec)) return absolute_path(candidate.string());
  }
  std::string searched;
  for (const std::string& dir : dirs) searched += "\n  " + dir;
  return not_found(std::string(kind.noun) + " '" + name_or_path + "' not found: no " + file + " in" +
                   (searched.empty() ? std::string(" (no folders)") : searched));
}

namespace {

// dlopen maps a library's segments as its headers describe them; a file cut
// short (a partial download or copy) then faults (SIGBUS) on the first touch
// past its end. So the ELF headers are read and every table and loadable
// segment checked against the file's size first. "" when the layout fits.
std::string elf_layout_problem(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "cannot open it: " + std::string(std::strerror(errno));
  struct stat st {};
  std::vector<char> head;
  std::string problem;
  auto read_at = [&](uint64_t offset, size_t count) {
    head.assign(count, 0);
    return ::pread(fd, head.data(), count, off_t(offset)) == ssize_t(count);
  };
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) problem = "it is not a regular file";
  const uint64_t size = problem.empty() ? uint64_t(st.st_size) : 0;
  Elf64_Ehdr header{};
  if (problem.empty()) {
    if (size < sizeof header || !read_at(0, sizeof header) || std::memcmp(head.data(), ELFMAG, SELFMAG) != 0)
      problem = "not an ELF shared library (" + std::to_string(size) + " bytes)";
    else if (head[EI_CLASS] != ELFCLASS64)
      problem = "not a 64-bit ELF library";
    else
      std::memcpy(&header, head.data(), sizeof header);
  }
  auto table_fits = [&](uint64_t offset, uint64_t entry, uint64_t count) {
    return offset <= size && entry <= size && count <= size && entry * count <= size - offset;
  };
  if (problem.empty() &&
      (header.e_phentsize < sizeof(Elf64_Phdr) || !table_fits(header.e_phoff, header.e_phentsize, header.e_phnum)))
    problem = "its program headers lie outside its " + std::to_string(size) + " bytes (truncated?)";
  if (problem.empty() && header.e_shoff != 0 && !table_fits(header.e_shoff, header.e_shentsize, header.e_shnum))
    problem = "its section headers lie outside its " + std::to_string(size) + " bytes (truncated?)";
  for (uint64_t k = 0; problem.empty() && k < header.e_phnum; ++k) {
    Elf64_Phdr segment{};
    if (!read_at(header.e_phoff + k * header.e_phentsize, sizeof segment)) {
      problem = "cannot read its program header " + std::to_string(k);
      break;
    }
    std::memcpy(&segment, head.data(), sizeof segment);
    if (segment.p_type == PT_LOAD && (segment.p_offset > size || segment.p_filesz > size - segment.p_offset))
      problem = "its loadable segment " + std::to_string(k) + " ends at byte " +
                std::to_string(segment.p_offset + segment.p_filesz) + ", past its " + std::to_string(size) +
                " bytes (truncated?)";
  }
  ::close(fd);
  return problem;
}

}  // namespace

StatusOr<PluginLibrary> PluginLibrary::open(const PluginKind& kind, const std::string& path) {
  PluginLibrary p;
  p.noun_ = kind.noun;
  p.path_ = absolute_path(path);
  const std::string& where = p.path_;
  const std::string what = std::string("an Onyx ") + kind.noun + " plugin";
  std::error_code ec;
  if (!fs::exists(where, ec)) return not_found(std::string(kind.noun) + " plugin " + where + ": no such file");
  if (std::string problem = elf_layout_problem(where); !problem.empty())
    return incompatible("cannot load " + std::string(kind.noun) + " plugin " + where + ": " + problem);
  try {
    // RTLD_NOW: unresolved symbols fail here, not in the middle of a run.
    p.library_.load(where, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    // The message carries dlerror(), which names a missing dependency.
    return unavailable("cannot load " + std::string(kind.noun) + " plugin " + where + ": " + e.what());
  }
  if (!p.library_.has(kind.entry_symbol))
    return incompatible(where + " is not " + what + ": it does not export " + kind.entry_symbol);
  // Every entry function returns a pointer to its static entry; the pointer
  // is read as untyped until the head says which kind of entry it is.
  // The symbol's address only: the call goes through the entry's own type.
  auto& symbol = p.library_.get<void()>(kind.entry_symbol);
  const void* raw = kind.call_entry(reinterpret_cast<void*>(&symbol));
  if (!raw) return incompatible(where + " is not " + what + ": " + kind.entry_symbol + "() returned NULL");
  uint32_t magic = 0, struct_size = 0;
  std::memcpy(&magic, static_cast<const char*>(raw) + offsetof(EntryHead, magic), sizeof magic);
  if (magic != kind.magic)
    return incompatible(where + " is not " + what + " (entry magic " + hex32(magic) + ", expected " +
                        hex32(kind.magic) + ")");
  std::memcpy(&struct_size, static_cast<const char*>(raw) + offsetof(EntryHead, struct_size), sizeof struct_size);
  if (struct_size < kind.min_entry_size)
    return incompatible(where + ": " + kind.noun + " entry is truncated (struct_size " +
                        std::to_string(struct_size) + ", ABI " + abi_version_string(kind.host_min_abi) +
                        "'s entry has " + std::to_string(kind.min_entry_size) + " bytes)");
  EntryHead head;
  std::memcpy(&head, raw, sizeof head);
  p.entry_ = raw;
  p.name_ = head.name ? head.name : "";
  p.version_ = head.version ? head.version : "";
  p.min_abi_ = head.min_abi_version;
  p.max_abi_ = head.max_abi_version;
  const uint32_t low = std::max(kind.host_min_abi, p.min_abi_);
  const uint32_t high = std::min(kind.host_max_abi, p.max_abi_);
  if (p.min_abi_ > p.max_abi_ || low > high)
    return incompatible(p.describe() + " speaks " + kind.noun + " ABI " + abi_range_string(p.min_abi_, p.max_abi_) +
                        ", but this Onyx host speaks " + abi_range_string(kind.host_min_abi, kind.host_max_abi));
  p.abi_version_ = high;
  return p;
}

std::string PluginLibrary::describe() const {
  return std::string(noun_) + " '" + name_ + "' (" + path_ + ")";
}

}  // namespace onyx::runtime
