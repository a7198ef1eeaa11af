// lr_scheduler.h: learning-rate schedules, as a pure function of the number
// of optimizer steps taken. One struct covers the four shapes:
//   constant  base_lr (after the optional warmup)
//   linear    warmup from 0 to base_lr, then linear to base_lr * final_factor at total_steps
//   cosine    warmup, then half a cosine from base_lr to base_lr * final_factor at total_steps
//   step      base_lr * gamma ^ floor(step / step_size) (after the optional warmup)
// Warmup (every kind) ramps linearly: lr(s) = base_lr * (s + 1) / warmup_steps for s < warmup_steps.
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace onyx::runtime::training {

struct LrSchedule {
  enum class Kind { kConstant, kLinear, kCosine, kStep };
  Kind kind = Kind::kConstant;
  double base_lr = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;    // linear, cosine: where the decay ends (> warmup_steps)
  double final_factor = 0.0;  // linear, cosine: lr at the end, as a fraction of base_lr
  int64_t step_size = 1;      // step
  double gamma = 0.1;         // step

  // The learning rate for the optimizer step that follows `steps_taken` steps.
  double lr_at(int64_t steps_taken) const;
  // Rejects negative counts, decay that ends before warmup, step_size < 1.
  Status validate() const;
};

// Parses the CLI's form: "KIND[:key=value,...]" with keys warmup, total,
// final (final_factor), step_size, gamma; e.g. "cosine:warmup=100,total=5000".
// base_lr is set by the caller.
StatusOr<LrSchedule> parse_lr_schedule(const std::string& text);

}  // namespace onyx::runtime::training
