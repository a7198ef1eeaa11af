#include "command.h"

#include <algorithm>
#include <charconv>

namespace onyx::cli {

bool ParsedArgs::has(const std::string& name) const {
  return std::any_of(options.begin(), options.end(), [&](const auto& o) { return o.first == name; });
}

std::optional<std::string> ParsedArgs::last(const std::string& name) const {
  for (auto it = options.rbegin(); it != options.rend(); ++it)
    if (it->first == name) return it->second;
  return std::nullopt;
}

std::vector<std::string> ParsedArgs::all(const std::string& name) const {
  std::vector<std::string> values;
  for (const auto& [key, value] : options)
    if (key == name) values.push_back(value);
  return values;
}

long long ParsedArgs::integer(const std::string& name, long long fallback, long long min,
                              long long max) const {
  std::optional<std::string> text = last(name);
  if (!text) return fallback;
  long long value = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end || text->empty())
    throw CliError(name + " expects an integer, got '" + *text + "'");
  if (value < min || value > max)
    throw CliError(name + " must be between " + std::to_string(min) + " and " +
                   std::to_string(max) + ", got " + *text);
  return value;
}

ParsedArgs parse_args(const Command& command, const std::vector<std::string>& args) {
  ParsedArgs parsed;
  bool only_positionals = false;  // after "--"
  for (size_t k = 0; k < args.size(); ++k) {
    const std::string& word = args[k];
    // A command may declare a short spelling such as "-o" as an option of its own.
    bool declared_short = std::any_of(command.options.begin(), command.options.end(),
                                      [&](const OptionSpec& s) { return s.name == word && word.rfind("--", 0) != 0; });
    if (only_positionals || word.size() < 2 || (word.rfind("--", 0) != 0 && !declared_short)) {
      if (!only_positionals && word.size() >= 2 && word[0] == '-' && word[1] != '-')
        throw CliError("unknown option '" + word + "' for 'onyx " + command.name +
                       "' (options are spelled --name; see onyx " + command.name + " --help)");
      parsed.positionals.push_back(word);
      continue;
    }
    if (word == "--") {
      only_positionals = true;
      continue;
    }
    size_t eq = word.find('=');
    std::string name = word.substr(0, eq);
    auto spec = std::find_if(command.options.begin(), command.options.end(),
                             [&](const OptionSpec& s) { return s.name == name; });
    if (spec == command.options.end())
      throw CliError("unknown option '" + name + "' for 'onyx " + command.name + "' (see onyx " +
                     command.name + " --help)");
    if (spec->value_name.empty()) {
      if (eq != std::string::npos) throw CliError(name + " takes no value");
      parsed.options.emplace_back(name, "");
    } else if (eq != std::string::npos) {
      parsed.options.emplace_back(name, word.substr(eq + 1));
    } else {
      if (k + 1 >= args.size()) throw CliError(name + " needs a value (" + name + " " + spec->value_name + ")");
      parsed.options.emplace_back(name, args[++k]);
    }
  }
  return parsed;
}

std::string command_help(const Command& command) {
  std::string text = "usage: " + command.usage + "\n\n" + command.summary + "\n";
  if (!command.details.empty()) text += "\n" + command.details + "\n";
  if (command.options.empty()) return text;
  text += "\noptions:\n";
  size_t width = 0;
  auto left = [](const OptionSpec& s) { return s.name + (s.value_name.empty() ? "" : " " + s.value_name); };
  for (const OptionSpec& s : command.options) width = std::max(width, left(s).size());
  for (const OptionSpec& s : command.options) {
    std::string l = left(s);
    text += "  " + l + std::string(width - l.size() + 2, ' ') + s.help + "\n";
  }
  return text;
}

std::vector<OptionSpec> session_option_specs() {
  return {
      {"--provider", "NAME", "provider to use, by name (cpu) or plugin path; repeat in priority order"},
      {"--provider-option", "KEY=VALUE",
       "device option for the preceding --provider; device=INDEX|ID picks its device (onyx providers lists them)"},
      {"--device-policy", "prefer-gpu|prefer-cpu|fastest",
       "choose the providers instead of --provider: GPUs then CPU, the CPU only, or the fastest measured"},
      {"--fallback", "fail|warn|allow", "what to do with nodes the first provider declines (default warn)"},
      {"--optimize", "off|basic|all", "graph rewrites before partitioning (default all; see the partition report)"},
      {"--threads", "N", "intra-op threads (default: one per core)"},
      {"--compiled-cache", "DIR",
       "keep what providers compile per kernel in DIR and load it next time (providers that can, ABI 1.2)"},
  };
}

}  // namespace onyx::cli
