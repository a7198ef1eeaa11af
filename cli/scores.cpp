#include "scores.h"

#include <cmath>
#include <vector>

#include "command.h"

namespace onyx::cli {

void ScoreTally::add(onyx::Tensor& scores, onyx::Tensor& labels, int64_t class_axis,
                     std::optional<int64_t> ignore_index, const std::string& where) {
  if (scores.dtype() != ONYX_DTYPE_FLOAT32) throw CliError(where + ": the scores must be float32");
  if (labels.dtype() != ONYX_DTYPE_INT64 && labels.dtype() != ONYX_DTYPE_INT32)
    throw CliError(where + ": the labels must be int64 or int32");
  std::vector<int64_t> dims = scores.shape();
  const int64_t rank = int64_t(dims.size());
  const int64_t axis = class_axis < 0 ? rank + class_axis : class_axis;
  if (rank < 2 || axis < 0 || axis >= rank)
    throw CliError(where + ": scores of rank " + std::to_string(rank) + " have no class axis " + std::to_string(class_axis));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= dims[size_t(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= dims[size_t(i)];
  const int64_t classes = dims[size_t(axis)];
  if (labels.size() != outer * inner)
    throw CliError(where + ": " + std::to_string(labels.size()) + " labels for " + std::to_string(outer * inner) +
                   " rows of scores");
  const float* s = scores.data<float>();
  auto label_at = [&](int64_t i) {
    return labels.dtype() == ONYX_DTYPE_INT64 ? labels.data<int64_t>()[i] : int64_t(labels.data<int32_t>()[i]);
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t label = label_at(o * inner + j);
      if (ignore_index && label == *ignore_index) continue;
      if (label < 0 || label >= classes)
        throw CliError(where + ": label " + std::to_string(label) + " is outside the model's " + std::to_string(classes) +
                       " classes");
      const float* row = s + o * classes * inner + j;
      int64_t best = 0;
      double top = row[0];
      for (int64_t c = 1; c < classes; ++c)
        if (row[c * inner] > top) top = row[c * inner], best = c;
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(double(row[c * inner]) - top);
      nll += top + std::log(sum) - double(row[label * inner]);
      correct += best == label;
      ++counted;
    }
  }
}

}  // namespace onyx::cli
