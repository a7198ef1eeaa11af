// small_models.cpp: tiny models for error paths, external data, and writing
// every model to a folder.
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "proto_builder.h"
#include "test_models.h"

namespace onyx::test_models {

std::vector<float> add_model_weight() { return {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 3.0f}; }

onnx::ModelProto build_add_model() {
  onnx::ModelProto model = new_model("add");
  onnx::GraphProto& g = *model.mutable_graph();
  add_input(g, "x", {int64_t(2), int64_t(3)});
  add_initializer(g, "w", {2, 3}, add_model_weight());
  add_node(g, "Add", "add", {"x", "w"}, {"y"});
  add_output(g, "y", {int64_t(2), int64_t(3)});
  return model;
}

onnx::ModelProto build_external_data_model(const std::string& location, int64_t offset, std::string* side_file) {
  onnx::ModelProto model = build_add_model();
  onnx::TensorProto& w = *model.mutable_graph()->mutable_initializer(0);
  std::string raw = w.raw_data();
  w.clear_raw_data();
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_entry = [&](const std::string& key, const std::string& value) {
    onnx::StringStringEntryProto* e = w.add_external_data();
    e->set_key(key);
    e->set_value(value);
  };
  add_entry("location", location);
  add_entry("offset", std::to_string(offset));
  add_entry("length", std::to_string(raw.size()));
  // Filler before the tensor, so a reader that ignores "offset" reads wrong values.
  *side_file = std::string(size_t(offset), '\x7f') + raw;
  return model;
}

void write_bytes(const std::string& bytes, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void write_model(const onnx::ModelProto& model, const std::filesystem::path& path) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw std::runtime_error("cannot serialize model for " + path.string());
  write_bytes(bytes, path);
}

std::vector<std::string> write_all_models(const std::filesystem::path& dir, uint64_t seed) {
  std::filesystem::create_directories(dir);
  write_model(build_mlp(make_mlp_weights(seed)), dir / "mlp.onnx");
  write_model(build_cnn(make_cnn_weights(seed)), dir / "cnn.onnx");
  write_model(build_add_model(), dir / "add.onnx");

  std::string side;
  write_model(build_external_data_model("external_data.bin", 64, &side), dir / "external_data.onnx");
  write_bytes(side, dir / "external_data.bin");
  // Points outside its folder: loading it must be refused (the side file is
  // not written; the refusal must come from the path, before any read).
  write_model(build_external_data_model("../outside_model_dir.bin", 0, &side), dir / "external_escape.onnx");

  // The MLP cut in half: a protobuf that fails to parse.
  std::string mlp;
  build_mlp(make_mlp_weights(seed)).SerializeToString(&mlp);
  write_bytes(mlp.substr(0, mlp.size() / 2), dir / "truncated.onnx");

  return {"mlp.onnx", "cnn.onnx", "add.onnx", "external_data.onnx", "external_data.bin",
          "external_escape.onnx", "truncated.onnx"};
}

}  // namespace onyx::test_models
