// proto_builder.h: small helpers for writing ONNX graphs by hand.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace onyx::test_models {

// A tensor dim: a fixed size or a symbolic name.
using Dim = std::variant<int64_t, std::string>;

// A ModelProto with IR version 8 and the ai.onnx opset 17 imported.
onnx::ModelProto new_model(const std::string& graph_name);

// Adds a float32 initializer with raw_data (little-endian).
void add_initializer(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                     const std::vector<float>& values);

// Graph input/output declarations (float32).
void add_input(onnx::GraphProto& graph, const std::string& name, const std::vector<Dim>& dims);
void add_output(onnx::GraphProto& graph, const std::string& name, const std::vector<Dim>& dims);

// Appends a node; returns it for adding attributes.
onnx::NodeProto& add_node(onnx::GraphProto& graph, const std::string& op, const std::string& name,
                          const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);
void set_ints(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void set_int(onnx::NodeProto& node, const std::string& name, int64_t value);
void set_float(onnx::NodeProto& node, const std::string& name, float value);

}  // namespace onyx::test_models
