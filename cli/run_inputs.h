// run_inputs.h: the inputs for `onyx run` / `onyx bench`: values read from
// --input files (tensors; sequences and optionals from SequenceProto /
// OptionalProto files), the rest generated (deterministically) from declared
// shapes; an optional input not given is left out (an empty optional).
#pragma once

#include <onyx/onyx.hpp>

#include <string>
#include <vector>

#include "command.h"

namespace onyx::cli {

struct RunInputs {
  std::vector<std::string> names;
  std::vector<onyx::Value> values;
  std::vector<std::string> notes;  // one line per input saying where its values came from
};

// Reads --input NAME=FILE (or FILE for a named TensorProto), checks each
// tensor against the model's declared dtype and shape, and fills every
// tensor input not given with random values of its --shape or declared shape.
// A sequence input must be given; an optional one may be left out.
RunInputs prepare_inputs(const onyx::Session& session, const ParsedArgs& args);

// Options for choosing inputs, shared by run and bench.
std::vector<OptionSpec> input_option_specs();

}  // namespace onyx::cli
