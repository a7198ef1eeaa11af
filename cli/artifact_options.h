// artifact_options.h: the options `onyx artifacts` and `onyx train` share
// (trainable/frozen parameters, loss, optimizer), defined in cmd_artifacts.cpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "command.h"

namespace onyx::cli {

std::vector<OptionSpec> artifact_option_specs();
// The options given on the command line, as onyx_training_generate_artifacts key/values.
std::vector<std::pair<std::string, std::string>> artifact_options_from(const ParsedArgs& args);

}  // namespace onyx::cli
