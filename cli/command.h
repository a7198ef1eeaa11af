// command.h: the CLI's subcommand table and a small option parser.
//
// Each subcommand declares its options (name, whether it takes a value, help
// text); the parser checks the command line against that list, so every
// command gets the same `--opt value` / `--opt=value` syntax, the same errors
// for unknown or incomplete options, and a generated `--help`.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace onyx::cli {

// A user-facing failure: main prints "onyx: error: <what>" and exits 1.
class CliError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string name;        // "--provider"
  std::string value_name;  // "NAME" (empty: a flag without a value)
  std::string help;
};

// The command line after parsing: options in the order given (order matters
// for repeated ones such as --provider) and the positional arguments.
class ParsedArgs {
 public:
  std::vector<std::pair<std::string, std::string>> options;  // (name, value or "")
  std::vector<std::string> positionals;

  bool has(const std::string& name) const;
  // The last value given for `name`, if any.
  std::optional<std::string> last(const std::string& name) const;
  // Every value given for `name`, in order.
  std::vector<std::string> all(const std::string& name) const;
  // The last value of `name` parsed as an integer in [min, max]; `fallback` if absent.
  long long integer(const std::string& name, long long fallback, long long min, long long max) const;
};

struct Command {
  std::string name;     // "run"
  std::string summary;  // one line for `onyx --help`
  std::string usage;    // "onyx run MODEL [options]"
  std::string details;  // paragraphs printed by `onyx run --help` after the usage
  std::vector<OptionSpec> options;
  int (*handler)(const ParsedArgs&) = nullptr;
};

// Parses `args` (the words after the command name) against `command`'s options.
// Throws CliError for an unknown option or a missing value.
ParsedArgs parse_args(const Command& command, const std::vector<std::string>& args);

// The text of `onyx COMMAND --help`.
std::string command_help(const Command& command);

// Options shared by the commands that create a session (providers, fallback, threads).
std::vector<OptionSpec> session_option_specs();

}  // namespace onyx::cli
