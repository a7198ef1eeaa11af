// checkpoint_state.h: the C API's OnyxCheckpointState, shared by the
// checkpoint API (checkpoint_c_api.cpp, checkpoint_tools_c_api.cpp) and the
// training API, whose sessions train the same state in place.
#pragma once

#include <onyx/checkpoint.h>

#include <memory>

#include "core/status.h"

struct OnyxCheckpointState {
  // Shared with the training sessions created with this state.
  std::shared_ptr<onyx::checkpoint::Checkpoint> state;
};

namespace onyx::runtime::capi {

inline OnyxCheckpointState* new_state(checkpoint::Checkpoint c) {
  return new OnyxCheckpointState{std::make_shared<checkpoint::Checkpoint>(std::move(c))};
}

// Brings the state's tensors to the host from the device where a training
// session keeps them between steps (training_session.h). Every function
// that reads or writes tensor data calls it first (training_c_api.cpp).
Status sync_from_devices(const OnyxCheckpointState& state);

}  // namespace onyx::runtime::capi
