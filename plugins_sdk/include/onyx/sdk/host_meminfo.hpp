// sdk/host_meminfo.hpp: the host's free memory, for providers whose device
// memory is host memory (OnyxDeviceProperties.free_memory_bytes, ABI 1.3).
// Linux: MemAvailable of /proc/meminfo (what the kernel estimates can be
// allocated without swapping, page cache included), read at each call.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace onyx::sdk {

// The bytes of the "MemAvailable:" line of a /proc/meminfo text ("MemAvailable:
// 123 kB"), 0 when the line is absent, malformed or does not fit 64 bits:
// 0 reads as "unknown", never as a wrong number.
inline uint64_t parse_meminfo_available(std::string_view text) {
  constexpr std::string_view kKey = "MemAvailable:";
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    uint64_t value = 0;
    size_t digits = 0;
    for (; digits < line.size() && line[digits] >= '0' && line[digits] <= '9'; ++digits) {
      const uint64_t digit = uint64_t(line[digits] - '0');
      if (value > (UINT64_MAX - digit) / 10) return 0;
      value = value * 10 + digit;
    }
    if (digits == 0) return 0;
    line.remove_prefix(digits);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line == "kB") return value > UINT64_MAX / 1024 ? 0 : value * 1024;
    return line.empty() ? value : 0;  // no unit: bytes; an unknown unit: unknown
  }
  return 0;
}

// MemAvailable now, in bytes; 0 when unknown (no /proc, another OS).
// Thread-safe.
inline uint64_t available_host_memory_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  std::string text;
  char buf[4096];
  // The file is a few KiB; a bound keeps a strange /proc from growing text.
  for (size_t n; text.size() < (size_t(1) << 16) && (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  return parse_meminfo_available(text);
}

}  // namespace onyx::sdk
