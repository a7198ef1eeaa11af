#include "run_inputs.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "session_setup.h"
#include "tensor_io.h"
#include "tensor_values.h"
#include "value_io.h"

namespace onyx::cli {
namespace {

const onyx::ValueMetadata* find_input(const std::vector<onyx::ValueMetadata>& inputs, const std::string& name) {
  for (const onyx::ValueMetadata& in : inputs)
    if (in.name == name) return &in;
  return nullptr;
}

// Refuses a file whose dtype or shape cannot feed `input`, naming both.
void check_against_declaration(const onyx::ValueMetadata& input, onyx::Tensor& tensor, const std::string& file) {
  std::string where = "input '" + input.name + "' from '" + file + "'";
  if (input.dtype != ONYX_DTYPE_UNDEFINED && tensor.dtype() != input.dtype)
    throw CliError(where + " has type " + dtype_name(tensor.dtype()) + ", the model expects " + dtype_name(input.dtype));
  if (input.rank < 0) return;
  std::vector<int64_t> shape = tensor.shape();
  bool fits = shape.size() == size_t(input.rank);
  for (size_t k = 0; fits && k < shape.size(); ++k) fits = input.dims[k] < 0 || input.dims[k] == shape[k];
  if (!fits)
    throw CliError(where + " has shape " + shape_text(shape, int32_t(shape.size())) + ", the model expects " +
                   shape_text(input.dims, input.rank));
}

// Per-input seeds, so that adding an input does not change the others' values.
uint64_t input_seed(uint64_t seed, size_t index) { return seed * 0x100000001B3ull + index * 0x9E3779B97F4A7C15ull; }

}  // namespace

RunInputs prepare_inputs(const onyx::Session& session, const ParsedArgs& args) {
  std::vector<onyx::ValueMetadata> inputs = session.inputs();
  std::map<std::string, std::vector<int64_t>> shapes = parse_shapes(args.all("--shape"), inputs);
  uint64_t seed = uint64_t(args.integer("--seed", 0, 0, INT64_MAX));
  RunInputs out;

  for (const std::string& value : args.all("--input")) {
    size_t eq = value.find('=');
    std::string name = eq == std::string::npos ? "" : value.substr(0, eq);
    std::string file = eq == std::string::npos ? value : value.substr(eq + 1);
    if (file.empty()) throw CliError("--input '" + value + "': missing file name (expected NAME=FILE)");
    if (const onyx::ValueMetadata* named = name.empty() ? nullptr : find_input(inputs, name);
        named && named->kind != ONYX_VALUE_TENSOR) {  // a SequenceProto or OptionalProto file
      for (const std::string& seen : out.names)
        if (seen == name) throw CliError("input '" + name + "' given twice with --input");
      LoadedValue loaded = read_value_proto_file(file, named->kind);
      out.notes.push_back("input " + name + ": " + value_summary(loaded.value) + " from " + file);
      out.names.push_back(name);
      out.values.push_back(std::move(loaded.value));
      continue;
    }
    LoadedTensor loaded = read_tensor_file(file);
    if (name.empty()) name = loaded.name;
    if (name.empty())
      throw CliError("--input " + file + ": the file does not name its input; write NAME=" + file +
                     " (model inputs: " + names_list(inputs) + ")");
    const onyx::ValueMetadata* input = find_input(inputs, name);
    if (!input)
      throw CliError("--input names unknown input '" + name + "' (model inputs: " + names_list(inputs) + ")");
    for (const std::string& seen : out.names)
      if (seen == name) throw CliError("input '" + name + "' given twice with --input");
    if (shapes.count(name)) throw CliError("input '" + name + "' has both --input and --shape; drop the --shape");
    check_against_declaration(*input, loaded.tensor, file);
    out.notes.push_back("input " + name + ": " + dtype_name(loaded.tensor.dtype()) + " " +
                        shape_text(loaded.tensor.shape(), int32_t(loaded.tensor.shape().size())) + " from " + file);
    out.names.push_back(name);
    out.values.push_back(onyx::Value::tensor(loaded.tensor));
  }

  for (size_t k = 0; k < inputs.size(); ++k) {
    const onyx::ValueMetadata& input = inputs[k];
    if (std::find(out.names.begin(), out.names.end(), input.name) != out.names.end()) continue;
    if (input.kind == ONYX_VALUE_OPTIONAL) {
      out.notes.push_back("input " + input.name + " not given: an empty optional");
      continue;
    }
    if (input.kind != ONYX_VALUE_TENSOR)
      throw CliError("input '" + input.name + "' is a " + (input.kind == ONYX_VALUE_MAP ? "map" : "sequence") +
                     "; give it with --input " + input.name + "=FILE (an ONNX " +
                     (input.kind == ONYX_VALUE_MAP ? "MapProto" : "SequenceProto") + " .pb)");
    if (input.dtype == ONYX_DTYPE_STRING)
      throw CliError("input '" + input.name + "' is a string tensor; give it with --input " + input.name +
                     "=FILE (an ONNX TensorProto .pb)");
    if (input.dtype == ONYX_DTYPE_UNDEFINED)
      throw CliError("input '" + input.name + "' has no declared element type; give it with --input " + input.name + "=FILE");
    bool assumed = false;
    std::vector<int64_t> dims = concrete_shape(input, shapes, &assumed);
    out.values.push_back(onyx::Value::tensor(random_tensor(input.dtype, dims, input_seed(seed, k))));
    out.names.push_back(input.name);
    out.notes.push_back("input " + input.name + " not given: using random " + dtype_name(input.dtype) + " " +
                        shape_text(dims, int32_t(dims.size())) + ", " + random_fill_description(input.dtype) +
                        ", seed " + std::to_string(seed) +
                        (assumed ? " (symbolic dims set to 1; choose with --shape " + input.name + "=...)" : ""));
  }
  return out;
}

std::vector<OptionSpec> input_option_specs() {
  return {
      {"--input", "NAME=FILE",
       "input from a TensorProto .pb or .npy file, or a SequenceProto/OptionalProto/MapProto .pb for a sequence, "
       "optional or map input (repeatable; FILE alone uses a TensorProto's name)"},
      {"--shape", "NAME=D1,D2,...", "shape of a generated input (default: declared, symbolic dims = 1)"},
      {"--seed", "N", "seed for generated inputs (default 0)"},
  };
}

}  // namespace onyx::cli
