// autotune_plugin.cpp: the "autotune" test provider, whose kernels take
// measurably long to compile, for the compiled-partition cache (ABI 1.2)
// tests (tests/runtime/compiled_cache_test.cpp).
//
// It claims float32 MatMul of a matrix by a constant matrix, and the Add of a
// constant bias [N] that follows such a MatMul as one fused group with it.
// Compiling a kernel autotunes its GEMM (autotune_gemm.hpp): every candidate
// tiling is timed on the node's shapes and the fastest kept, and the constant
// weight is packed into that tiling's panels. Kernel::serialize writes the
// chosen tiling and the packed weights; make_kernel_from_cache reads them
// back, checking every size, so a cached session skips the tuning.
//
// Test hooks: the compatibility string is "autotune gemm layout 1" plus the
// value of ONYX_TEST_AUTOTUNE_COMPAT (read at device_open), so a test can
// play a driver or plugin update. Built with AUTOTUNE_MAX_ABI_1_1 the plugin
// speaks ABI 1.0-1.1 only: a host must then never call its cache functions.
#include <onyx/plugin_sdk.hpp>

#include <chrono>
#include <cstdlib>
#include <span>

#include "autotune_gemm.hpp"

namespace {

namespace sdk = onyx::sdk;

constexpr uint32_t kBlobMagic = 0x4E555441;  // "ATUN"
constexpr uint32_t kBlobLayout = 1;

bool is_matrix(const OnyxValueInfo& v) { return v.dtype == ONYX_DTYPE_FLOAT32 && v.rank == 2; }

// The graph's node computing value `v`, or -1.
int64_t producer_of(const OnyxGraphView& g, int32_t v) {
  for (size_t k = 0; k < g.node_count; ++k)
    for (size_t o = 0; o < g.nodes[k].output_count; ++o)
      if (g.nodes[k].outputs[o] == v) return int64_t(k);
  return -1;
}
size_t readers_of(const OnyxGraphView& g, int32_t v) {
  size_t count = 0;
  for (size_t k = 0; k < g.node_count; ++k)
    for (size_t i = 0; i < g.nodes[k].input_count; ++i) count += g.nodes[k].inputs[i] == v;
  return count;
}

// "" when node `k` is a MatMul this provider runs: A [M, K] by constant B [K, N].
std::string matmul_decline(const OnyxGraphView& g, size_t k) {
  const OnyxNodeView& n = g.nodes[k];
  if (std::string(n.op_type) != "MatMul" || n.domain[0]) return "autotune: runs MatMul (and its bias Add) only";
  if (n.input_count != 2 || n.output_count != 1 || n.inputs[0] < 0 || n.inputs[1] < 0)
    return "autotune: MatMul with two inputs";
  const OnyxValueInfo &a = g.values[n.inputs[0]], &b = g.values[n.inputs[1]];
  if (!is_matrix(a) || !is_matrix(b) || !(b.flags & ONYX_VALUE_CONSTANT) || !b.constant)
    return "autotune: float32 matrix times a constant float32 matrix only";
  if (a.dims[1] != b.dims[0] || b.dims[0] <= 0 || b.dims[1] <= 0 || b.dims[0] * b.dims[1] > (int64_t(1) << 26))
    return "autotune: inner dimensions must be known and equal";
  return {};
}

// "" when node `k` is an Add of a constant bias [N] (or [1, N]) to a matrix [M, N].
std::string bias_add_decline(const OnyxGraphView& g, size_t k, int64_t* n_out) {
  const OnyxNodeView& n = g.nodes[k];
  if (std::string(n.op_type) != "Add" || n.domain[0] || n.input_count != 2 || n.output_count != 1 ||
      n.inputs[0] < 0 || n.inputs[1] < 0)
    return "autotune: runs MatMul (and its bias Add) only";
  const OnyxValueInfo &x = g.values[n.inputs[0]], &bias = g.values[n.inputs[1]];
  const int64_t cols = is_matrix(x) ? x.dims[1] : -1;
  const bool bias_ok = bias.dtype == ONYX_DTYPE_FLOAT32 && (bias.flags & ONYX_VALUE_CONSTANT) && bias.constant &&
                       ((bias.rank == 1 && bias.dims[0] == cols) ||
                        (bias.rank == 2 && bias.dims[0] == 1 && bias.dims[1] == cols));
  if (cols <= 0 || !bias_ok) return "autotune: Add of a constant float32 bias [N] to a matrix [M, N] only";
  *n_out = cols;
  return {};
}

class GemmKernel : public sdk::Kernel {
 public:
  int64_t k = 0, n = 0;
  bool gemm = true;  // false: a bias Add alone (its group was dissolved)
  autotune::Tiling tiling;
  std::vector<float> packed, bias;

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const sdk::Tensor a = ctx.in(0);
    if (a.rank() != 2 || a.dim(1) != (gemm ? k : n))
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "autotune: input of shape other than compiled for");
    const int64_t dims[2] = {a.dim(0), n};
    sdk::Tensor y;
    // A fused group's outputs are the MatMul's (internal) then the Add's.
    const size_t output = ctx.output_count() - 1;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(output, ONYX_DTYPE_FLOAT32, dims, &y));
    const float* x = a.data<float>();
    float* out = y.data<float>();
    if (!gemm) {
      for (int64_t i = 0; i < dims[0]; ++i)
        for (int64_t j = 0; j < n; ++j) out[i * n + j] = x[i * n + j] + bias[size_t(j)];
      return nullptr;
    }
    autotune::gemm(tiling, x, packed.data(), bias.empty() ? nullptr : bias.data(), out, dims[0], k, n);
    return nullptr;
  }

  OnyxStatus* serialize(sdk::BlobWriter& w) const override {
    if (!gemm) return sdk::Kernel::serialize(w);  // a bias Add compiles nothing
    const int64_t header[8] = {k, n, tiling.tile_m, tiling.tile_n, tiling.tile_k, tiling.order,
                               int64_t(packed.size()), int64_t(bias.size())};
    ONYX_SDK_RETURN_IF_ERROR(w.value(kBlobMagic));
    ONYX_SDK_RETURN_IF_ERROR(w.value(kBlobLayout));
    ONYX_SDK_RETURN_IF_ERROR(w.values(std::span<const int64_t>(header)));
    ONYX_SDK_RETURN_IF_ERROR(w.values(std::span<const float>(packed)));
    return w.values(std::span<const float>(bias));
  }
};

// The bias of the group's Add (`nodes` = {MatMul, Add}), copied.
std::vector<float> bias_of(const OnyxGraphView& g, std::span<const uint32_t> nodes) {
  if (nodes.size() < 2) return {};
  const OnyxTensorView& t = *g.values[g.nodes[nodes[1]].inputs[1]].constant;
  const float* data = static_cast<const float*>(t.data);
  return std::vector<float>(data, data + t.dims[t.rank - 1]);
}

class AutotuneProvider : public sdk::HostMemory {
 public:
  struct Device {
    std::string compatibility;
  };

  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t) const {
    return host_device("autotune test device", "Onyx tests");
  }
  sdk::StatusOr<std::unique_ptr<Device>> open_device(size_t, const sdk::DeviceOptions&) const {
    auto d = std::make_unique<Device>();
    const char* extra = std::getenv("ONYX_TEST_AUTOTUNE_COMPAT");
    d->compatibility = std::string("autotune gemm layout 1") + (extra ? std::string(" ") + extra : "");
    return d;
  }
  std::string cache_compatibility(Device& d) const { return d.compatibility; }

  OnyxStatus* capability(Device&, const OnyxGraphView& g, std::span<OnyxNodeClaim> claims) const {
    for (uint32_t k = 0; k < g.node_count; ++k) {
      std::string why = matmul_decline(g, k);
      int64_t cols = 0;
      if (!why.empty() && bias_add_decline(g, k, &cols).empty()) {
        const int64_t mm = producer_of(g, g.nodes[k].inputs[0]);
        const int32_t mid = g.nodes[k].inputs[0];
        if (mm >= 0 && matmul_decline(g, size_t(mm)).empty() && readers_of(g, mid) == 1 &&
            !(g.values[mid].flags & ONYX_VALUE_GRAPH_OUTPUT)) {
          claims[size_t(mm)].fused_group = uint32_t(mm) + 1;
          claims[k].fused_group = uint32_t(mm) + 1;
        }
        why.clear();  // claimed: fused, or alone as a bias Add
      }
      claims[k].claimed = why.empty();
      std::snprintf(claims[k].reason, sizeof claims[k].reason, "%s", why.c_str());
    }
    return nullptr;
  }

  sdk::KernelResult make_kernel(Device&, const OnyxGraphView& g, std::span<const uint32_t> nodes) const {
    auto kernel = std::make_unique<GemmKernel>();
    if (!check_group(g, nodes, kernel.get()))
      return sdk::make_status(ONYX_STATUS_UNIMPLEMENTED, "autotune: not a group this provider claims");
    if (!kernel->gemm) return kernel;
    const auto start = std::chrono::steady_clock::now();
    const OnyxValueInfo& a = g.values[g.nodes[nodes[0]].inputs[0]];
    const int64_t m = a.dims[0] > 0 ? std::min<int64_t>(a.dims[0], 512) : 64;
    kernel->tiling = autotune::tune(m, kernel->k, kernel->n, 2);
    const OnyxTensorView& b = *g.values[g.nodes[nodes[0]].inputs[1]].constant;
    kernel->packed = autotune::pack(static_cast<const float*>(b.data), kernel->k, kernel->n, kernel->tiling.tile_n);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    sdk::host_log(ONYX_LOG_INFO, "autotune: tuned MatMul %lldx%lld in %.0f ms", (long long)kernel->k,
                  (long long)kernel->n, ms);
    return kernel;
  }

  sdk::KernelResult make_kernel_from_cache(Device&, const OnyxGraphView& g, std::span<const uint32_t> nodes,
                                           sdk::BlobReader& blob) const {
    auto kernel = std::make_unique<GemmKernel>();
    if (!check_group(g, nodes, kernel.get()) || !kernel->gemm)
      return sdk::make_status(ONYX_STATUS_INCOMPATIBLE, "autotune: not a group this provider caches");
    uint32_t magic = 0, layout = 0;
    int64_t h[8] = {};
    if (!blob.value(&magic) || !blob.value(&layout) || magic != kBlobMagic)
      return sdk::make_status(ONYX_STATUS_DATA_LOSS, "autotune: not an autotune blob");
    if (layout != kBlobLayout)
      return sdk::make_status(ONYX_STATUS_INCOMPATIBLE, "autotune: blob layout %u, this build reads %u", layout,
                              kBlobLayout);
    if (!blob.values(h, 8)) return sdk::make_status(ONYX_STATUS_DATA_LOSS, "autotune: truncated blob header");
    kernel->tiling = {h[2], h[3], h[4], h[5]};
    const int64_t packed_size = autotune::valid_tiling(kernel->tiling)
                                    ? autotune::panels(kernel->n, kernel->tiling.tile_n) * kernel->k * kernel->tiling.tile_n
                                    : -1;
    if (h[0] != kernel->k || h[1] != kernel->n || packed_size < 0 || h[6] != packed_size ||
        h[7] != int64_t(kernel->bias.size()))
      return sdk::make_status(ONYX_STATUS_DATA_LOSS, "autotune: blob sizes do not match the node");
    kernel->packed.resize(size_t(packed_size));
    if (!blob.values(kernel->packed.data(), kernel->packed.size()) ||
        !blob.values(kernel->bias.data(), kernel->bias.size()) || blob.left() != 0)
      return sdk::make_status(ONYX_STATUS_DATA_LOSS, "autotune: blob of the wrong length");
    return kernel;
  }

 private:
  // Fills k, n, gemm and bias for a group this provider claims; false otherwise.
  static bool check_group(const OnyxGraphView& g, std::span<const uint32_t> nodes, GemmKernel* kernel) {
    int64_t cols = 0;
    if (nodes.size() == 1 && bias_add_decline(g, nodes[0], &cols).empty()) {
      kernel->gemm = false;
      kernel->n = cols;
      const OnyxTensorView& t = *g.values[g.nodes[nodes[0]].inputs[1]].constant;
      kernel->bias.assign(static_cast<const float*>(t.data), static_cast<const float*>(t.data) + cols);
      return true;
    }
    if (nodes.empty() || nodes.size() > 2 || !matmul_decline(g, nodes[0]).empty()) return false;
    if (nodes.size() == 2 && !bias_add_decline(g, nodes[1], &cols).empty()) return false;
    const OnyxValueInfo& b = g.values[g.nodes[nodes[0]].inputs[1]];
    kernel->k = b.dims[0];
    kernel->n = b.dims[1];
    if (nodes.size() == 2 && cols != kernel->n) return false;
    kernel->bias = bias_of(g, nodes);
    return true;
  }
};

#ifdef AUTOTUNE_MAX_ABI_1_1
const OnyxPluginEntry kEntry = {ONYX_PLUGIN_MAGIC, sizeof(OnyxPluginEntry), ONYX_ABI_VERSION(1, 0),
                                ONYX_ABI_VERSION(1, 1), "autotune_1_1", "test",
                                &sdk::ProviderTable<AutotuneProvider>::create<>};
#else
const OnyxPluginEntry kEntry = sdk::plugin_entry<AutotuneProvider>("autotune", "test");
#endif

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
