// dataset.h: labelled image sets in the IDX format of MNIST and
// Fashion-MNIST (Debian: dataset-fashion-mnist, /usr/share/datasets/fashion-mnist),
// plain or gzip-compressed, for `onyx train` and `onyx eval`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onyx::cli {

struct ImageDataset {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<float> pixels;    // count * rows * cols, scaled to [0, 1]
  std::vector<int64_t> labels;  // count
  int64_t pixels_per_image() const { return rows * cols; }
};

// Reads DIR/<split>-images-idx3-ubyte[.gz] and DIR/<split>-labels-idx1-ubyte[.gz]
// (split "train" or "t10k"). Throws CliError naming the file for a missing
// file, a bad magic number, a truncated file or counts that disagree.
ImageDataset load_idx_dataset(const std::string& dir, const std::string& split);

// Throws CliError when a label is outside [0, classes).
void check_labels(const ImageDataset& data, int64_t classes, const std::string& what);

}  // namespace onyx::cli
