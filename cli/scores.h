// scores.h: how well a model's class scores match labels: accuracy and mean
// cross-entropy (hence perplexity), skipping labels equal to an ignore index,
// for scores with their classes on axis 1 ([N, C, d...], labels [N, d...])
// or on the last axis ([d..., C], labels [d...], as language models write them).
#pragma once

#include <onyx/onyx.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace onyx::cli {

struct ScoreTally {
  int64_t counted = 0;  // labels that are not the ignore index
  int64_t correct = 0;  // of those, where the highest score is the label's
  double nll = 0;       // sum of -log softmax(scores)[label], in double

  // Adds one batch. Throws CliError naming `where` when the shapes disagree or
  // a counted label is outside [0, classes).
  void add(onyx::Tensor& scores, onyx::Tensor& labels, int64_t class_axis, std::optional<int64_t> ignore_index,
           const std::string& where);
  double accuracy() const { return counted ? double(correct) / double(counted) : 0; }
  double mean_nll() const { return counted ? nll / double(counted) : 0; }
};

}  // namespace onyx::cli
