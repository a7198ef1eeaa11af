// sharded_optimizer.h: ZeRO stage 1, the optimizer state sharded over the
// ranks of a data-parallel job (Rajbhandari et al., SC'20).
//
// Layout: the trainable float32 parameters, in checkpoint order, form one
// flat vector of P elements, padded with zeros to P_pad = N * S, S =
// checkpoint::shard_piece(P, N) (a multiple of 32 elements, the checkpoint
// shards' own rule); rank r owns elements [r*S, (r+1)*S). A parameter
// may straddle ranks: each rank's slice is a list of parts (parameter, first
// element, length), and the optimizer runs on the parts as 1-D parameters of
// an optimizer model built for them (optimizer_model.h), so each rank holds
// the state of S elements only.
//
// A step: the gradients are reduce-scattered (sum, then / N: each rank gets
// the mean gradient of its slice), the global norm comes from one small
// all-reduce of the slices' sums of squares and clips the slice exactly as
// the unsharded optimizer model clips every gradient, the optimizer updates
// the slice, and the updated slices are all-gathered into every rank's
// weights. Per step: one reduce-scatter and one all-gather of P_pad floats
// (per bucket) and one 8-byte all-reduce, the traffic of plain data
// parallelism.
//
// Only optimizers whose update is elementwise (SGD, AdamW) can run on parts;
// LAMB's per-parameter trust ratio is refused.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "onyx/checkpoint.h"
#include "plugin/provider.h"
#include "session/session.h"
#include "training/optimizer_model.h"
#include "training/optimizer_plugin.h"

namespace onyx::runtime::training {

class ShardedOptimizer {
 public:
  // `state`: the checkpoint's optimizer state for these parameters to start
  // from (each rank takes its parts of it), or null to start fresh.
  static StatusOr<std::unique_ptr<ShardedOptimizer>> create(
      ProviderRegistry& registry, const SessionOptions& options, std::shared_ptr<Communicator> comm,
      const OptimizerDescription& optimizer, const std::vector<ParameterGroup>& groups,
      const std::vector<size_t>& parameter_groups, const std::vector<checkpoint::TensorRecord>& trainable,
      const checkpoint::OptimizerGroup* state, size_t bucket_bytes);

  // One optimizer step over `grads` (this rank's, one per trainable
  // parameter): replaces every trainable parameter's data with the updated
  // weights. `hyperparameters` in the optimizer's declared order; step counts
  // from 1. *grad_norm: the global norm of the mean gradient before clipping.
  // A non-finite norm (an inf or NaN gradient on any rank) skips the update
  // on every rank alike: *skipped = true, weights and state unchanged.
  Status step(const std::vector<Tensor>& grads, std::vector<checkpoint::TensorRecord>& trainable, float lr,
              int64_t step, float max_grad_norm, const std::vector<float>& hyperparameters, float* grad_norm,
              bool* skipped);

  // Collective: every rank's slices of every state slot, gathered into the
  // checkpoint's per-parameter form (group.parameters replaced).
  Status gather_state(const std::vector<checkpoint::TensorRecord>& trainable, checkpoint::OptimizerGroup& group);

  // This rank's shard of `state` (whose trainable parameters are the ones
  // this optimizer updates and whose optimizer group `group` it keeps the
  // step of), exactly as checkpoint::shard() cuts a complete checkpoint for
  // this world size: the rank's slices of the parameters and of their state,
  // everything else whole. Built from the rank's own state: nothing gathered.
  checkpoint::Checkpoint shard(const checkpoint::Checkpoint& state, const checkpoint::OptimizerGroup& group) const;

  size_t padded_elements() const { return padded_; }
  size_t slice_elements() const { return slice_; }
  // Optimizer state this rank holds, in bytes.
  size_t state_bytes() const;

 private:
  struct Part {
    size_t parameter;  // index in trainable
    size_t first;      // first element within the parameter
    size_t length;
    size_t offset;     // within this rank's slice
  };
  ShardedOptimizer() = default;

  std::shared_ptr<Communicator> comm_;
  std::vector<Part> parts_;
  std::vector<size_t> param_offset_;  // each parameter's first element in the flat vector
  size_t total_ = 0, padded_ = 0, slice_ = 0, bucket_elements_ = 0;
  std::vector<std::string> slot_names_, hyper_names_;
  std::vector<std::pair<std::string, float>> group_inputs_;  // the groups' overrides (optimizer_model.h)
  std::vector<std::vector<Tensor>> slots_;  // [part][slot]: this rank's state
  std::unique_ptr<Session> model_;          // the optimizer over the parts
  std::vector<float> flat_, slice_grad_, slice_param_;
};

}  // namespace onyx::runtime::training
