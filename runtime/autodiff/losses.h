// losses.h: appends a loss to a forward graph.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "autodiff/emitter.h"
#include "autodiff/training_model.h"

namespace onyx::runtime::autodiff {

struct LossNodes {
  std::string loss;  // the scalar loss value (renamed to "loss" by the caller)
  std::vector<ONNX_NAMESPACE::ValueInfoProto> label_inputs;
};

// Emits the loss of `spec` over the graph's forward outputs:
//   mse            mean/sum of (y - labels)^2
//   l1             mean/sum of |y - labels|
//   crossentropy   NLL of LogSoftmax(y, axis 1); labels int64/int32 [N, d1...]
//   nll            y are log-probabilities [N, C, d1...]
//   bcewithlogits  (1 - t) x + softplus(-x): stable for any logit
//   custom         the user's graph, its inputs bound by name
StatusOr<LossNodes> add_loss(ONNX_NAMESPACE::GraphProto* graph, Emitter& e, const LossSpec& spec);

}  // namespace onyx::runtime::autodiff
