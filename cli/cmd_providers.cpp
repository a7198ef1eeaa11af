// cmd_providers.cpp: `onyx providers`: the provider plugins found on disk.
#include <onyx/onyx.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "json.h"

namespace onyx::cli {
namespace {

std::string memory_text(double bytes) {
  char buf[32];
  if (bytes >= double(1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1ull << 30));
  else std::snprintf(buf, sizeof buf, "%.0f MiB", bytes / double(1ull << 20));
  return buf;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + "  " : s + std::string(width - s.size() + 2, ' ');
}

int run_providers(const ParsedArgs& args) {
  if (!args.positionals.empty())
    throw CliError("onyx providers: unexpected argument '" + args.positionals[0] + "'");
  onyx::Env env;
  for (const std::string& dir : args.all("--provider-dir")) env.add_provider_dir(dir);
  std::string text = env.providers_json();
  if (args.has("--json")) {
    std::cout << text << "\n";
    return 0;
  }
  Json list = Json::parse(text);
  if (list.items().empty()) {
    std::cout << "no provider plugins found (searched --provider-dir, ONYX_PROVIDER_PATH, the "
                 "executable's folder and <exe>/../lib/onyx/providers)\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"NAME", "VERSION", "ABI", "PATH", "STATUS"}};
  for (const Json& p : list.items()) {
    std::string status = p["available"].boolean() ? "available" : "unavailable: " + p["reason"].str("unknown reason");
    if (!p["loaded"].boolean(true)) status = "not loaded: " + p["reason"].str("unknown reason");
    rows.push_back({p["name"].str("?"), p["version"].str("-"), p["abi"].str("-"), p["path"].str(), status});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c + 1 < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (size_t c = 0; c < rows[r].size(); ++c) line += c + 1 < rows[r].size() ? pad(rows[r][c], width[c]) : rows[r][c];
    std::cout << line << "\n";
    if (r == 0) continue;
    const Json& devices = list.items()[r - 1]["devices"];
    for (size_t d = 0; d < devices.items().size(); ++d) {
      const Json& dev = devices.items()[d];
      std::string detail = dev["vendor"].str();
      if (dev["memory_bytes"].num() > 0) detail += (detail.empty() ? "" : ", ") + memory_text(dev["memory_bytes"].num());
      if (dev["free_memory_bytes"].num() > 0)
        detail += (detail.empty() ? "" : ", ") + memory_text(dev["free_memory_bytes"].num()) + " free";
      const std::string id = dev["stable_id"].str();
      std::cout << "    device " << d << (id.empty() ? "" : " [" + id + "]") << ": " << dev["name"].str("?")
                << (detail.empty() ? "" : " (" + detail + ")") << "\n";
    }
  }
  return 0;
}

}  // namespace

Command providers_command() {
  return {"providers",
          "list the provider plugins found and whether they can run here",
          "onyx providers [--json] [--provider-dir DIR ...]",
          "Plugins are searched in --provider-dir folders, then ONYX_PROVIDER_PATH (':'-separated),\n"
          "then the executable's folder and <exe>/../lib/onyx/providers. Each device is listed with\n"
          "its index and stable id [in brackets]; a session opens one with --provider-option device=INDEX|ID.",
          {{"--json", "", "print the runtime's JSON list instead of a table"},
           {"--provider-dir", "DIR", "also search DIR for plugins (repeatable)"}},
          run_providers};
}

}  // namespace onyx::cli
