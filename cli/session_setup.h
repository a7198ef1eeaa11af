// session_setup.h: what the session-creating commands (info, run, bench)
// share: provider/fallback/thread options, model loading with clear errors,
// --shape parsing, and dtype names.
#pragma once

#include <onyx/onyx.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "command.h"

namespace onyx::cli {

// Builds SessionOptions from --provider/--provider-option/--fallback/--threads/--compiled-cache.
onyx::SessionOptions session_options_from(const ParsedArgs& args);

// The single MODEL positional of a command, checked to exist as a file.
std::string model_path_from(const ParsedArgs& args, const std::string& command);

// Creates a session, turning failures into "cannot load model 'PATH': ..." errors.
std::unique_ptr<onyx::Session> open_session(onyx::Env& env, const std::string& model_path,
                                            const onyx::SessionOptions& options);

// Parses "--shape NAME=1,3,224,224" values into name -> dims, checking every
// name is one of `inputs`.
std::map<std::string, std::vector<int64_t>> parse_shapes(const std::vector<std::string>& values,
                                                         const std::vector<onyx::ValueMetadata>& inputs);

// The concrete shape to use for `input`: an explicit --shape if given (checked
// against the declared rank and fixed dims), else the declared shape with
// symbolic or unknown dims set to 1. `assumed` is set when a dim was defaulted.
std::vector<int64_t> concrete_shape(const onyx::ValueMetadata& input,
                                    const std::map<std::string, std::vector<int64_t>>& shapes,
                                    bool* assumed);

// --isolate and --run-timeout (run, bench): onyx_session_options_set_isolation.
std::vector<OptionSpec> isolation_option_specs();

// "float32"; "dtype(N)" for codes the CLI does not name.
// --profile FILE (run, bench): the runs' Chrome trace (onyx_session_start_profiling).
OptionSpec profile_option_spec();
// Ends the session's profiling and writes the trace to `path` atomically.
void write_profile(onyx::Session& session, const std::string& path);

std::string dtype_name(int32_t dtype);
// Bytes per element; 0 for types the CLI cannot handle (strings, sub-byte types).
size_t dtype_size(int32_t dtype);
// "[N, 784]" with symbolic dims as "?", or "[?]" (unknown rank) when rank < 0.
std::string shape_text(const std::vector<int64_t>& dims, int32_t rank);
std::string names_list(const std::vector<onyx::ValueMetadata>& values);

}  // namespace onyx::cli
