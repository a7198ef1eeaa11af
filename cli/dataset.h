// dataset.h: the data `onyx train` and `onyx eval` read. Two layouts:
//   - labelled image sets in the IDX format of MNIST and Fashion-MNIST
//     (Debian: dataset-fashion-mnist, /usr/share/datasets/fashion-mnist),
//     plain or gzip-compressed, split "train" and "t10k";
//   - a folder per split of NumPy arrays, DIR/<split>/<input>.npy, one per
//     model input plus labels.npy, each [samples, ...] (any model: the MLM
//     example writes input_ids, attention_mask and labels).
#pragma once

#include <onyx/onyx.hpp>

#include <cstdint>
#include <map>
#include <optional>
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

// Samples as named columns: column "labels" and one per model input, each a
// tensor [count, sample dims...].
struct Dataset {
  std::string source;  // for messages: the folder and split
  int64_t count = 0;
  std::map<std::string, onyx::Tensor> columns;

  // The column feeding `name`; throws CliError naming the dataset when absent.
  onyx::Tensor& column(const std::string& name);
  // A tensor [n, sample dims...] of `name`'s samples at `indices` (n of them).
  void gather(const std::string& name, const int64_t* indices, int64_t n, onyx::Tensor& batch);
  onyx::Tensor batch_for(const std::string& name, int64_t n);
};

// True when DIR/<split>/ holds .npy arrays (the array layout).
bool is_array_dataset(const std::string& dir, const std::string& split);
// True when DIR has the split in either layout.
bool has_split(const std::string& dir, const std::string& split);

// The split of DIR in either layout. For IDX sets the images become column
// `image_input`, shaped for an input of `image_rank` 2 ([pixels]) or 4
// ([1, rows, cols] per sample). Array sets must hold equal sample counts in
// every file; errors name the file.
Dataset load_dataset(const std::string& dir, const std::string& split, const std::string& image_input, int image_rank);

// The forward model's first data input (where IDX images go) and, when its
// first output is [N, C] with C known, the class count C (else -1).
struct ModelInterface {
  std::string first_input;
  int first_input_rank = -1;
  int64_t classes = -1;
};
ModelInterface read_model_interface(const std::string& model_path);

// Throws CliError naming the sample when an integer label of `data` is
// outside [0, classes) and not `ignore_index`.
void check_labels(Dataset& data, int64_t classes, std::optional<int64_t> ignore_index);

}  // namespace onyx::cli
