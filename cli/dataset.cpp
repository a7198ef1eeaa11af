#include "dataset.h"

#include <zlib.h>

#include <filesystem>

#include "command.h"

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

void check_labels(const ImageDataset& data, int64_t classes, const std::string& what) {
  for (int64_t i = 0; i < data.count; ++i)
    if (data.labels[size_t(i)] < 0 || data.labels[size_t(i)] >= classes)
      throw CliError(what + ": label " + std::to_string(data.labels[size_t(i)]) + " of example " + std::to_string(i) +
                     " is outside the model's " + std::to_string(classes) + " classes");
}

}  // namespace onyx::cli
