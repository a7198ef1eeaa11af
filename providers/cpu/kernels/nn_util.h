// nn_util.h: private helpers shared by the CPU provider's neural-network
// kernel files (conv/, pool/, norm/, linalg/, grad/): the host pool as the
// GEMM's ParallelFor, parallel grains and sliding-window geometry.
#pragma once

#include <onyx/plugin_sdk.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gemm/gemm.h"
#include "kernels/kernel_util.h"

namespace onyx::cpu::nn {

// Error messages and axes: the helpers shared with the other kernel files.
using util::dims_str;
using util::fail;
using util::node_label;
using util::normalize_axis;

// Reads element k of a float32/float64 tensor as double (for small
// per-channel parameter vectors whose type may differ from X's).
double element_as_double(const sdk::Tensor& t, int64_t k);

// The host's thread pool as the GEMM library's ParallelFor. Inside a
// parallel_for body use serial_parallel_for() instead: the host pool must
// not be entered recursively.
ParallelFor host_parallel_for(sdk::ComputeContext& ctx);
ParallelFor serial_parallel_for();

// Picks a parallel_for grain so that one chunk holds about `target_work`
// units when each item costs `work_per_item`.
size_t grain_for(double work_per_item, double target_work = 32768);

// ---------------------------------------------------------------------------
// Sliding windows (Conv, ConvTranspose, pools)
// ---------------------------------------------------------------------------

// Geometry of one spatial dimension of a sliding window.
struct WindowDim {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
  int64_t extent() const { return (kernel - 1) * dilation + 1; }
};

// The window attributes as written on the node; empty vectors mean "default".
struct WindowAttrs {
  std::string auto_pad = "NOTSET";  // NOTSET, SAME_UPPER, SAME_LOWER, VALID
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  bool ceil_mode = false;

  static WindowAttrs read(const sdk::NodeInfo& node);
  // "" when the attributes are well formed for `spatial` dims (0: rank not
  // known yet, only the rank-independent checks run).
  std::string check(size_t spatial) const;
};

// Resolves output sizes and pads of a forward window (Conv and the pools)
// for input sizes `in` and kernel sizes `kernel`. Returns "" or the error.
// Follows the ONNX rules: SAME_* gives ceil(in / stride) outputs with the
// odd pad at the end (UPPER) or the beginning (LOWER); with ceil_mode a last
// window that would start inside the end padding is dropped.
std::string resolve_forward(const WindowAttrs& attrs, std::span<const int64_t> in,
                            std::span<const int64_t> kernel, std::vector<WindowDim>* dims);

// The indices j in [0, count) with lo <= start + j * step < hi, as [first,
// last) (empty when first == last). Used to clip kernel taps and output
// columns to the input so that inner loops need no bounds checks.
struct IndexRange {
  int64_t first = 0, last = 0;
  int64_t size() const { return last - first; }
};
IndexRange index_range(int64_t start, int64_t step, int64_t count, int64_t lo, int64_t hi);

// Prepends unit dimensions so that 1-D and 2-D windows run through the 3-D
// loops (a size-1 dim with kernel 1, stride 1, no pad changes nothing).
void lift_to_3d(std::vector<WindowDim>* dims);

}  // namespace onyx::cpu::nn
