#include "session/device_choice.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace onyx::runtime {

namespace {

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(uint64_t(1) << 30));
  return text;
}

}  // namespace

std::string describe_devices(const Provider& provider) {
  std::string text;
  const size_t count = provider.device_count();
  for (size_t d = 0; d < count; ++d) {
    text += "\n  " + std::to_string(d) + ": ";
    auto props = provider.device_properties(d);
    if (!props.ok()) {
      text += "(properties unreadable: " + props.status().message() + ")";
      continue;
    }
    text += props->stable_id[0] ? props->stable_id : "(no stable id)";
    text += std::string(", ") + props->name;
    if (props->free_memory_bytes) text += ", " + gib(props->free_memory_bytes) + " free";
  }
  return count ? text : "\n  (none)";
}

StatusOr<size_t> resolve_device(const Provider& provider, const std::string& selector) {
  const size_t count = provider.device_count();
  const std::string where = "provider '" + provider.name() + "' has ";
  size_t index = 0;
  const char* end = selector.data() + selector.size();
  const bool digits = !selector.empty() && std::all_of(selector.begin(), selector.end(),
                                                       [](char c) { return c >= '0' && c <= '9'; });
  if (digits) {
    auto [ptr, ec] = std::from_chars(selector.data(), end, index);
    if (ec != std::errc() || ptr != end || index >= count)
      return invalid_argument(where + "no device " + selector + " (" + std::to_string(count) +
                              " devices; name one by index or stable id):" + describe_devices(provider));
    return index;
  }
  std::vector<size_t> matches;
  for (size_t d = 0; d < count; ++d) {
    auto props = provider.device_properties(d);
    if (props.ok() && props->stable_id[0] && selector == props->stable_id) matches.push_back(d);
  }
  if (matches.size() == 1) return matches[0];
  if (matches.empty())
    return invalid_argument(where + "no device with stable id '" + selector +
                            "' (name one by index or stable id):" + describe_devices(provider));
  return invalid_argument(where + std::to_string(matches.size()) + " devices with stable id '" + selector +
                          "' (a plugin bug: ids are unique); name one by index:" + describe_devices(provider));
}

}  // namespace onyx::runtime
