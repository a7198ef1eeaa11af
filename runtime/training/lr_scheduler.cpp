#include "training/lr_scheduler.h"

#include <cmath>
#include <numbers>
#include <sstream>

namespace onyx::runtime::training {

double LrSchedule::lr_at(int64_t s) const {
  if (s < warmup_steps) return base_lr * double(s + 1) / double(warmup_steps);
  switch (kind) {
    case Kind::kConstant:
      return base_lr;
    case Kind::kLinear: {
      double span = double(total_steps - warmup_steps);
      double t = std::min(1.0, double(s - warmup_steps) / span);
      return base_lr * (1.0 - t * (1.0 - final_factor));
    }
    case Kind::kCosine: {
      double span = double(total_steps - warmup_steps);
      double t = std::min(1.0, double(s - warmup_steps) / span);
      double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * t));
      return base_lr * (final_factor + (1.0 - final_factor) * cosine);
    }
    case Kind::kStep:
      return base_lr * std::pow(gamma, double((s - warmup_steps) / step_size));
  }
  return base_lr;
}

Status LrSchedule::validate() const {
  if (!(base_lr >= 0) || !std::isfinite(base_lr)) return invalid_argument("learning rate must be finite and >= 0");
  if (warmup_steps < 0) return invalid_argument("lr schedule: warmup must be >= 0");
  if ((kind == Kind::kLinear || kind == Kind::kCosine) && total_steps <= warmup_steps)
    return invalid_argument("lr schedule: total (" + std::to_string(total_steps) +
                            ") must exceed warmup (" + std::to_string(warmup_steps) + ")");
  if (kind == Kind::kStep && step_size < 1) return invalid_argument("lr schedule: step_size must be >= 1");
  if (final_factor < 0) return invalid_argument("lr schedule: final must be >= 0");
  return Status();
}

StatusOr<LrSchedule> parse_lr_schedule(const std::string& text) {
  LrSchedule s;
  std::string kind = text.substr(0, text.find(':'));
  if (kind == "constant") s.kind = LrSchedule::Kind::kConstant;
  else if (kind == "linear") s.kind = LrSchedule::Kind::kLinear;
  else if (kind == "cosine") s.kind = LrSchedule::Kind::kCosine;
  else if (kind == "step") s.kind = LrSchedule::Kind::kStep;
  else return invalid_argument("unknown lr schedule '" + kind + "' (constant, linear, cosine, step)");
  if (text.size() > kind.size()) {
    std::stringstream in(text.substr(kind.size() + 1));
    std::string item;
    while (std::getline(in, item, ',')) {
      size_t eq = item.find('=');
      std::string key = item.substr(0, eq);
      if (eq == std::string::npos) return invalid_argument("lr schedule: '" + item + "' is not key=value");
      try {
        std::string value = item.substr(eq + 1);
        if (key == "warmup") s.warmup_steps = std::stoll(value);
        else if (key == "total") s.total_steps = std::stoll(value);
        else if (key == "final") s.final_factor = std::stod(value);
        else if (key == "step_size") s.step_size = std::stoll(value);
        else if (key == "gamma") s.gamma = std::stod(value);
        else return invalid_argument("lr schedule: unknown key '" + key + "' (warmup, total, final, step_size, gamma)");
      } catch (const std::exception&) {
        return invalid_argument("lr schedule: '" + item + "' has a malformed number");
      }
    }
  }
  return s;
}

}  // namespace onyx::runtime::training
