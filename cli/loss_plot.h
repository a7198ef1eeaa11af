// loss_plot.h: the SVG chart `onyx train` writes: the per-step training loss
// (light) and its running mean (dark), the validation loss at each evaluation
// (red) and the validation accuracy on a right-hand 0-100% axis (green).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onyx::cli {

struct ValidationPoint {
  int64_t step = 0;  // steps taken when it was measured
  double loss = 0, accuracy = 0;
};

std::string loss_svg(const std::vector<float>& losses, const std::vector<ValidationPoint>& validation,
                     const std::string& title);

}  // namespace onyx::cli
