#include "dataset.h"

#include <onnx/onnx_pb.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "command.h"
#include "tensor_io.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;

// The whole file, decompressed when it is gzip (gzread reads plain files too).
std::vector<unsigned char> read_maybe_gzip(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw CliError("cannot open " + path.string());
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(f, chunk, sizeof chunk)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  int err = 0;
  const char* message = n < 0 ? gzerror(f, &err) : nullptr;
  std::string why = message ? message : "";
  gzclose(f);
  if (n < 0) throw CliError("cannot read " + path.string() + ": " + why);
  return bytes;
}

fs::path find_file(const std::string& dir, const std::string& name) {
  for (const char* suffix : {".gz", ""}) {
    fs::path p = fs::path(dir) / (name + suffix);
    if (fs::exists(p)) return p;
  }
  throw CliError("dataset file " + (fs::path(dir) / name).string() + "[.gz] not found");
}

uint32_t big_endian(const std::vector<unsigned char>& b, size_t at) {
  return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | uint32_t(b[at + 3]);
}

}  // namespace

ImageDataset load_idx_dataset(const std::string& dir, const std::string& split) {
  fs::path images_path = find_file(dir, split + "-images-idx3-ubyte");
  fs::path labels_path = find_file(dir, split + "-labels-idx1-ubyte");
  std::vector<unsigned char> images = read_maybe_gzip(images_path);
  std::vector<unsigned char> labels = read_maybe_gzip(labels_path);
  if (images.size() < 16 || big_endian(images, 0) != 0x00000803)
    throw CliError(images_path.string() + " is not an IDX image file (magic 0x00000803)");
  if (labels.size() < 8 || big_endian(labels, 0) != 0x00000801)
    throw CliError(labels_path.string() + " is not an IDX label file (magic 0x00000801)");
  ImageDataset d;
  d.count = big_endian(images, 4);
  d.rows = big_endian(images, 8);
  d.cols = big_endian(images, 12);
  if (int64_t(big_endian(labels, 4)) != d.count)
    throw CliError(labels_path.string() + " holds " + std::to_string(big_endian(labels, 4)) + " labels but " +
                   images_path.string() + " holds " + std::to_string(d.count) + " images");
  size_t pixel_count = size_t(d.count * d.rows * d.cols);
  if (images.size() != 16 + pixel_count) throw CliError(images_path.string() + " is truncated or has trailing bytes");
  if (labels.size() != 8 + size_t(d.count)) throw CliError(labels_path.string() + " is truncated or has trailing bytes");
  d.pixels.resize(pixel_count);
  for (size_t i = 0; i < pixel_count; ++i) d.pixels[i] = float(images[16 + i]) / 255.0f;
  d.labels.resize(size_t(d.count));
  for (size_t i = 0; i < size_t(d.count); ++i) d.labels[i] = labels[8 + i];
  return d;
}

onyx::Tensor& Dataset::column(const std::string& name) {
  auto it = columns.find(name);
  if (it == columns.end()) {
    std::string have;
    for (const auto& [n, t] : columns) have += (have.empty() ? "" : ", ") + n;
    throw CliError(source + " has no data for the model's input '" + name + "' (it has: " + have + ")");
  }
  return it->second;
}

onyx::Tensor Dataset::batch_for(const std::string& name, int64_t n) {
  std::vector<int64_t> dims = column(name).shape();
  dims[0] = n;
  return onyx::Tensor::zeros(column(name).dtype(), dims);
}

void Dataset::gather(const std::string& name, const int64_t* indices, int64_t n, onyx::Tensor& batch) {
  onyx::Tensor& all = column(name);
  const size_t sample_bytes = all.byte_size() / size_t(count);
  if (batch.byte_size() != sample_bytes * size_t(n)) throw CliError("internal: batch of '" + name + "' has the wrong size");
  const auto* from = all.data<unsigned char>();
  auto* to = batch.data<unsigned char>();
  for (int64_t k = 0; k < n; ++k)
    std::copy_n(from + size_t(indices[k]) * sample_bytes, sample_bytes, to + size_t(k) * sample_bytes);
}

bool is_array_dataset(const std::string& dir, const std::string& split) {
  std::error_code ec;
  fs::path folder = fs::path(dir) / split;
  if (!fs::is_directory(folder, ec)) return false;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.path().extension() == ".npy") return true;
  return false;
}

bool has_split(const std::string& dir, const std::string& split) {
  std::error_code ec;
  for (const char* suffix : {"", ".gz"})
    if (fs::exists(fs::path(dir) / (split + "-labels-idx1-ubyte" + suffix), ec)) return true;
  return is_array_dataset(dir, split);
}

Dataset load_dataset(const std::string& dir, const std::string& split, const std::string& image_input, int image_rank) {
  Dataset d;
  d.source = (fs::path(dir) / split).string();
  if (is_array_dataset(dir, split)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(fs::path(dir) / split))
      if (entry.path().extension() == ".npy") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      onyx::Tensor t = read_npy_file(file.string()).tensor;
      std::vector<int64_t> dims = t.shape();
      if (dims.empty()) throw CliError(file.string() + " is a scalar; a dataset array is [samples, ...]");
      if (d.columns.empty()) d.count = dims[0];
      if (dims[0] != d.count)
        throw CliError(file.string() + " holds " + std::to_string(dims[0]) + " samples but " + files[0].string() +
                       " holds " + std::to_string(d.count));
      d.columns.emplace(file.stem().string(), std::move(t));
    }
    if (d.count == 0) throw CliError(d.source + " holds no samples");
    return d;
  }
  if (image_rank != 2 && image_rank != 4)
    throw CliError(dir + " is an IDX image set: the model's image input must be [batch, pixels] or "
                   "[batch, 1, rows, cols]; it has rank " + std::to_string(image_rank));
  ImageDataset images = load_idx_dataset(dir, split);
  d.count = images.count;
  std::vector<int64_t> dims = image_rank == 2 ? std::vector<int64_t>{images.count, images.pixels_per_image()}
                                              : std::vector<int64_t>{images.count, 1, images.rows, images.cols};
  d.columns.emplace(image_input, onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, dims, images.pixels));
  d.columns.emplace("labels", onyx::Tensor::from<int64_t>(ONYX_DTYPE_INT64, {images.count}, images.labels));
  return d;
}

ModelInterface read_model_interface(const std::string& model_path) {
  std::ifstream in(model_path, std::ios::binary);
  ONNX_NAMESPACE::ModelProto model;
  if (!in || !model.ParseFromIstream(&in)) throw CliError("cannot read '" + model_path + "' as an ONNX model");
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  ModelInterface m;
  for (const auto& input : model.graph().input()) {
    if (initializers.count(input.name())) continue;
    m.first_input = input.name();
    m.first_input_rank = input.type().tensor_type().shape().dim_size();
    break;
  }
  if (model.graph().output_size() > 0) {
    const auto& dims = model.graph().output(0).type().tensor_type().shape();
    if (dims.dim_size() == 2 && dims.dim(1).has_dim_value()) m.classes = dims.dim(1).dim_value();
  }
  return m;
}

void check_labels(Dataset& data, int64_t classes, std::optional<int64_t> ignore_index) {
  onyx::Tensor& labels = data.column("labels");
  if (classes <= 0 || (labels.dtype() != ONYX_DTYPE_INT64 && labels.dtype() != ONYX_DTYPE_INT32)) return;
  const int64_t per_sample = labels.size() / data.count;
  for (int64_t i = 0; i < labels.size(); ++i) {
    int64_t label = labels.dtype() == ONYX_DTYPE_INT64 ? labels.data<int64_t>()[i] : labels.data<int32_t>()[i];
    if ((label < 0 || label >= classes) && !(ignore_index && label == *ignore_index))
      throw CliError(data.source + ": label " + std::to_string(label) + " of sample " + std::to_string(i / per_sample) +
                     " is outside the model's " + std::to_string(classes) + " classes");
  }
}

}  // namespace onyx::cli
