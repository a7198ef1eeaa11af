// run_inputs.h: the inputs for `onyx run` / `onyx bench`: tensors read from
// --input files, the rest generated (deterministically) from declared shapes.
#pragma once

#include <onyx/onyx.hpp>

#include <string>
#include <vector>

#include "command.h"

namespace onyx::cli {

struct RunInputs {
  std::vector<std::string> names;
  std::vector<onyx::Tensor> tensors;
  std::vector<std::string> notes;  // one line per input saying where its values came from
};

// Reads --input NAME=FILE (or FILE for a named TensorProto), checks each
// against the model's declared dtype and shape, and fills every input not
// given with random values of its --shape or declared shape.
RunInputs prepare_inputs(const onyx::Session& session, const ParsedArgs& args);

// Options for choosing inputs, shared by run and bench.
std::vector<OptionSpec> input_option_specs();

}  // namespace onyx::cli
