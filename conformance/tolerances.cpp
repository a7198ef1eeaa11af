// tolerances.cpp: the one table of output tolerances, with the reason for
// each row. Look-up is by the op under test (for an `_expanded` case: the op
// whose function body it is). Element types with less precision than float32
// widen the row (see tolerance_for).
#include <algorithm>
#include <cstring>

#include "compare.h"

namespace onyx::conformance {

namespace {

constexpr const char* kSummation =
    "sums many products: a provider's summation order (blocked, vectorised, "
    "threaded) differs from numpy's, so results near zero carry ~n*eps*max|term| of cancellation error";

const ToleranceRow kTable[] = {
    {"*", 1e-3, 1e-7,
     "ONNX's backend test runner defaults (onnx/backend/test/runner): the expected data was "
     "computed in float32/float64 by numpy; 1e-3 relative covers libm differences of a few ulp"},
    {"MatMul", 1e-3, 1e-5, kSummation},
    {"Gemm", 1e-3, 1e-5, kSummation},
    {"Conv", 1e-3, 1e-5, kSummation},
    {"ConvTranspose", 1e-3, 1e-5, kSummation},
    {"DeformConv", 1e-3, 1e-5, kSummation},
    {"Einsum", 1e-3, 1e-5, kSummation},
    {"Attention", 1e-3, 1e-5, kSummation},
    {"RNN", 1e-3, 1e-5, "recurrent GEMMs feed back through tanh/sigmoid: summation-order error accumulates over time steps"},
    {"GRU", 1e-3, 1e-5, "recurrent GEMMs feed back through tanh/sigmoid: summation-order error accumulates over time steps"},
    {"LSTM", 1e-3, 1e-5, "recurrent GEMMs feed back through tanh/sigmoid: summation-order error accumulates over time steps"},
    {"BatchNormalization", 1e-3, 1e-5, "mean and variance are sums over the batch; training mode subtracts nearly equal numbers"},
    {"InstanceNormalization", 1e-3, 1e-5, "mean and variance are sums; normalised values near zero carry cancellation error"},
    {"LayerNormalization", 1e-3, 1e-5, "mean and variance are sums; normalised values near zero carry cancellation error"},
    {"GroupNormalization", 1e-3, 1e-5, "mean and variance are sums; normalised values near zero carry cancellation error"},
    {"RMSNormalization", 1e-3, 1e-5, "the mean of squares is a sum over the normalised axes"},
    {"LpNormalization", 1e-3, 1e-5, "the norm is a sum of |x|^p over the axis"},
    {"ReduceSum", 1e-3, 1e-5, kSummation},
    {"ReduceMean", 1e-3, 1e-5, kSummation},
    {"ReduceSumSquare", 1e-3, 1e-5, kSummation},
    {"ReduceL1", 1e-3, 1e-5, kSummation},
    {"ReduceL2", 1e-3, 1e-5, kSummation},
    {"ReduceLogSum", 1e-3, 1e-5, kSummation},
    {"ReduceLogSumExp", 1e-3, 1e-5, kSummation},
    {"CumSum", 1e-3, 1e-5, "running sums: a vectorised scan adds in another order than numpy's cumsum"},
    {"Softmax", 1e-3, 1e-6, "the denominator is a sum of exponentials"},
    {"LogSoftmax", 1e-3, 1e-5, "log of a sum of exponentials; results near zero carry its rounding"},
    {"SoftmaxCrossEntropyLoss", 1e-3, 1e-5, "log-softmax then a weighted mean over the batch"},
    {"NegativeLogLikelihoodLoss", 1e-3, 1e-6, "a weighted mean over the batch"},
    {"DFT", 1e-3, 1e-4,
     "an FFT rounds differently from the direct O(n^2) sum that produced the data: error grows "
     "with log2(n)*eps*sum|x|, and zero-valued bins of real signals come out as small non-zeros"},
    {"STFT", 1e-3, 1e-4, "per frame DFTs (see DFT)"},
    {"MelWeightMatrix", 1e-3, 1e-5, "triangle filters from linear interpolation of FFT bin frequencies"},
    {"Resize", 1e-3, 1e-5, "cubic and linear interpolation weights are sums of products of coordinates"},
    {"GridSample", 1e-3, 1e-5, "bilinear/bicubic weights computed from un-normalised grid coordinates"},
    {"RoiAlign", 1e-3, 1e-5, "averages of bilinear samples: sums of products"},
    {"AffineGrid", 1e-3, 1e-5, "a small matrix product per grid point"},
    {"Adam", 1e-3, 1e-6, "moment updates and a square root; the data was computed in float64"},
    {"Adagrad", 1e-3, 1e-6, "accumulated squares and a square root; the data was computed in float64"},
    {"Momentum", 1e-3, 1e-6, "a chain of multiply-adds; the data was computed in float64"},
};

}  // namespace

const ToleranceRow* tolerance_table(size_t* count) {
  *count = sizeof kTable / sizeof *kTable;
  return kTable;
}

Tolerance tolerance_for(const std::string& op, int32_t dtype) {
  const ToleranceRow* row = &kTable[0];
  for (const ToleranceRow& r : kTable)
    if (op == r.op) row = &r;
  Tolerance t{row->rtol, row->atol, row->reason};
  switch (dtype) {
    case 10:  // float16: 11 significant bits, eps 2^-10; a few roundings of intermediates
      t.rtol = std::max(t.rtol, 4e-3);
      t.atol = std::max(t.atol, 1e-3);
      t.reason = "float16 output: eps is 2^-10 and intermediates round to float16";
      break;
    case 16:  // bfloat16: 8 significant bits, eps 2^-7
      t.rtol = std::max(t.rtol, 2e-2);
      t.atol = std::max(t.atol, 1e-2);
      t.reason = "bfloat16 output: eps is 2^-7 and intermediates round to bfloat16";
      break;
    default: break;
  }
  return t;
}

}  // namespace onyx::conformance
