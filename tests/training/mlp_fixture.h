// mlp_fixture.h: a small MLP (x[B,12] -> Gemm 16 + Relu -> Gemm 5 -> logits,
// softmax cross-entropy with int64 labels, mean over the batch) as an ONNX
// forward model, and a float64 implementation of the
// same math (forward, backward) that the training tests compare against.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <vector>


namespace onyx::mlp_fixture {

inline constexpr int64_t kIn = 12, kHidden = 16, kClasses = 5;

struct MlpParams {
  std::vector<double> w1, b1, w2, b2;  // w1 [kHidden, kIn], w2 [kClasses, kHidden] (transB)
};

struct Batch {
  int64_t size = 0;
  std::vector<float> x;        // [size, kIn]
  std::vector<int64_t> labels;  // [size]
};

// Deterministic He-uniform weights, rounded to float.
MlpParams initial_params(uint64_t seed);
ONNX_NAMESPACE::ModelProto forward_model(const MlpParams& p);
// Batches with labels from a fixed random linear rule, so that there is something to learn.
std::vector<Batch> make_batches(int count, int64_t batch_size, uint64_t seed);

// Mean cross-entropy and its gradients (same layout as the parameters).
double loss_and_grads(const MlpParams& p, const Batch& batch, MlpParams* grads);

}  // namespace onyx::mlp_fixture
