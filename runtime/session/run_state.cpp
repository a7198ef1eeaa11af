// run_state.cpp: reading and writing a run's slots as host values.
#include "session/run_state.h"

#include <cstring>

#include "session/session.h"

namespace onyx::runtime {

const char* cancelled_by(const RunState& run) {
  if (run.session->cancel_generation() != run.cancel_generation) return "cancel_runs";
  if (run.options && run.options->cancel_generation() != run.options_generation) return "its run options";
  return nullptr;
}

Value slot_value(const RunState& run, int v) {
  if (v < 0 || !run.slots[size_t(v)].present) return Value();
  const RunSlot& slot = run.slots[size_t(v)];
  if (!slot.composite.is_tensor()) return slot.composite;
  if (!slot.host.empty() && slot.host.data() == slot.data) return slot.host;
  // Device memory that the host can read (copy insertion copies the rest).
  Tensor t = Tensor::allocate(slot.dtype, slot.dims);
  if (t.bytes()) std::memcpy(t.data(), slot.data, t.bytes());
  return t;
}

void set_slot_value(RunState& run, int v, const Value& value) {
  if (v < 0) return;
  RunSlot& slot = run.slots[size_t(v)];
  slot = RunSlot{};
  slot.present = true;
  if (!value.is_tensor()) {
    slot.composite = value;
    return;
  }
  const Tensor& t = value.tensor();
  slot.dtype = t.dtype();
  slot.dims = t.shape();
  slot.data = t.data();
  slot.host = t;
}

std::vector<RunSlot> SlotCache::take(size_t values) {
  {
    std::lock_guard lock(mutex_);
    if (!spare_.empty()) {
      std::vector<RunSlot> slots = std::move(spare_.back());
      spare_.pop_back();
      if (slots.size() == values) return slots;
    }
  }
  return std::vector<RunSlot>(values);
}

void SlotCache::give_back(std::vector<RunSlot> slots) {
  std::lock_guard lock(mutex_);
  if (spare_.size() < 4) spare_.push_back(std::move(slots));  // more runs at once than that: made anew
}

}  // namespace onyx::runtime
