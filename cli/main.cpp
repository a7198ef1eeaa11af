// main.cpp: `onyx`, the command-line front end of the runtime. Dispatches to a
// subcommand; every failure ends as "onyx: error: <message>" and exit status 1.
#include <onyx/onyx.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"

namespace onyx::cli {
namespace {

std::vector<Command> all_commands() {
  return {providers_command(), info_command(), run_command(), bench_command(), checkpoint_command(),
          artifacts_command(), train_command(), eval_command()};
}

std::string top_help(const std::vector<Command>& commands) {
  std::string text =
      "usage: onyx COMMAND [options]\n\n"
      "Runs ONNX models on pluggable hardware providers.\n\ncommands:\n";
  size_t width = 0;
  for (const Command& c : commands) width = std::max(width, c.name.size());
  for (const Command& c : commands) text += "  " + c.name + std::string(width - c.name.size() + 2, ' ') + c.summary + "\n";
  text +=
      "\noptions:\n"
      "  --help     show this help (onyx COMMAND --help for a command's options)\n"
      "  --version  print the version\n";
  return text;
}

bool wants_help(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

int dispatch(const std::vector<std::string>& argv) {
  std::vector<Command> commands = all_commands();
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h" || argv[0] == "help") {
    std::cout << top_help(commands);
    return argv.empty() ? 1 : 0;
  }
  if (argv[0] == "--version") {
    std::cout << "onyx " << onyx_version() << "\n";
    return 0;
  }
  for (const Command& command : commands) {
    if (command.name != argv[0]) continue;
    std::vector<std::string> rest(argv.begin() + 1, argv.end());
    if (wants_help(rest)) {
      std::cout << command_help(command);
      return 0;
    }
    return command.handler(parse_args(command, rest));
  }
  throw CliError("unknown command '" + argv[0] + "' (see onyx --help)");
}

}  // namespace
}  // namespace onyx::cli

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return onyx::cli::dispatch(args);
  } catch (const std::bad_alloc&) {
    std::cerr << "onyx: error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "onyx: error: " << e.what() << "\n";
  }
  return 1;
}
