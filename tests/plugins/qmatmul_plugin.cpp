// qmatmul_plugin.cpp: the "qmatmul" provider, purpose-built for the QDQ
// fusion tests (tests/runtime/optimize/qdq_fusion_test.cpp).
//
// It runs exactly one op, ONNX QLinearMatMul on matrices (uint8 or int8,
// per-tensor scales, b per tensor or per column), and declines everything
// else, float MatMul included. A session listing it ahead of "cpu" shows
// that the optimizer rewrites DQ -> MatMul -> Q into QLinearMatMul only
// because a provider claims that node, and that the node then reaches the
// plugin through the ABI like any other.
//
// QLinearMatMul (ONNX): y = saturate(round_half_even(
//     sum_k (a[i,k] - a_zp) * (b[k,j] - b_zp[j]) * a_scale * b_scale[j] / y_scale) + y_zp)
// computed here in double, the reference the tests compare with.
#include <onyx/plugin_sdk.hpp>

#include <cmath>
#include <span>

namespace {

namespace sdk = onyx::sdk;

bool is_8bit(int32_t dtype) { return dtype == ONYX_DTYPE_UINT8 || dtype == ONYX_DTYPE_INT8; }

// "" when this provider runs the node, else why not.
std::string decline_reason(const sdk::NodeInfo& node) {
  if (!node.domain.empty() || node.op_type != "QLinearMatMul") return "qmatmul: runs QLinearMatMul only";
  if (node.inputs.size() != 8 || node.outputs.size() != 1) return "qmatmul: unexpected arity";
  const sdk::ValueDesc &a = node.inputs[0], &b = node.inputs[3], &y = node.outputs[0];
  if (!is_8bit(a.dtype) || !is_8bit(b.dtype) || !is_8bit(y.dtype)) return "qmatmul: 8-bit tensors only";
  if (a.rank != 2 || b.rank != 2) return "qmatmul: matrices only";
  for (size_t k : {1, 4, 6})
    if (!node.inputs[k].present || node.inputs[k].dtype != ONYX_DTYPE_FLOAT32) return "qmatmul: float32 scales only";
  const int32_t zero_types[3][2] = {{2, a.dtype}, {5, b.dtype}, {7, y.dtype}};
  for (const auto& [k, dtype] : zero_types)
    if (!node.inputs[size_t(k)].present || node.inputs[size_t(k)].dtype != dtype)
      return "qmatmul: zero points must be given, of their tensor's type";
  return {};
}

double element(const sdk::Tensor& t, int64_t i) {
  const int64_t k = t.size() == 1 ? 0 : i;  // per tensor, or per column
  switch (t.dtype) {
    case ONYX_DTYPE_UINT8: return t.data<uint8_t>()[k];
    case ONYX_DTYPE_INT8: return t.data<int8_t>()[k];
    default: return t.data<float>()[k];
  }
}

class QLinearMatMulKernel : public sdk::Kernel {
 public:
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const sdk::Tensor a = ctx.in(0), a_scale = ctx.in(1), a_zero = ctx.in(2);
    const sdk::Tensor b = ctx.in(3), b_scale = ctx.in(4), b_zero = ctx.in(5);
    const sdk::Tensor y_scale = ctx.in(6), y_zero = ctx.in(7);
    const int64_t rows = a.dim(0), inner = a.dim(1), cols = b.dim(1);
    if (b.dim(0) != inner) return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "qmatmul: inner dims differ");
    sdk::Tensor y;
    const int64_t dims[2] = {rows, cols};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, y_zero.dtype, dims, &y));
    const double lo = y.dtype == ONYX_DTYPE_INT8 ? -128 : 0, hi = y.dtype == ONYX_DTYPE_INT8 ? 127 : 255;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < inner; ++k)
          acc += (element(a, i * inner + k) - element(a_zero, 0)) * (element(b, k * cols + j) - element(b_zero, j));
        const double v = std::nearbyint(acc * element(a_scale, 0) * element(b_scale, j) / element(y_scale, 0)) +
                         element(y_zero, 0);
        const double q = std::fmin(hi, std::fmax(lo, v));
        if (y.dtype == ONYX_DTYPE_INT8) y.data<int8_t>()[i * cols + j] = int8_t(q);
        else y.data<uint8_t>()[i * cols + j] = uint8_t(q);
      }
    return nullptr;
  }
};

class QMatMulProvider : public sdk::HostMemory {
 public:
  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t) const {
    return host_device("qmatmul test device", "Onyx tests");
  }

  sdk::StatusOr<std::unique_ptr<sdk::NoDeviceState>> open_device(size_t, const sdk::DeviceOptions&) const {
    return std::make_unique<sdk::NoDeviceState>();
  }

  OnyxStatus* capability(sdk::NoDeviceState&, const OnyxGraphView& graph, std::span<OnyxNodeClaim> claims) const {
    for (uint32_t k = 0; k < graph.node_count; ++k) {
      std::string why = decline_reason(sdk::NodeInfo(graph, k, sdk::Constants::kBorrow));
      claims[k].claimed = why.empty();
      std::snprintf(claims[k].reason, sizeof claims[k].reason, "%s", why.c_str());
    }
    return nullptr;
  }

  sdk::KernelResult make_kernel(sdk::NoDeviceState&, const OnyxGraphView& graph, std::span<const uint32_t> nodes) const {
    if (nodes.size() != 1) return sdk::make_status(ONYX_STATUS_UNIMPLEMENTED, "qmatmul: no fused groups");
    std::string why = decline_reason(sdk::NodeInfo(graph, nodes[0], sdk::Constants::kBorrow));
    if (!why.empty()) return sdk::make_status(ONYX_STATUS_UNIMPLEMENTED, "%s", why.c_str());
    return std::make_unique<QLinearMatMulKernel>();
  }
};

const OnyxPluginEntry kEntry = sdk::plugin_entry<QMatMulProvider>("qmatmul", "test");

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
