// model_run_fuzzer.cpp: libFuzzer harness from model bytes to a finished run
// on the CPU provider: load, shape inference, graph optimization,
// partitioning, planning, kernel creation and one run with every tensor
// input filled (unknown dims 1). Where model_loader stops at the loader,
// this reaches the kernels with hostile attributes and shapes. Any input
// must give outputs or an error; a crash, a hang or memory past libFuzzer's
// limits is a finding.
//
// Models whose inferred tensors are large are skipped before any session
// exists: a valid Expand to 2^30 elements costs what it says, and that cost
// is not a bug. So are models whose convolutions or matrix products take
// more than 2^28 multiply-adds by their inferred shapes (a Conv of a 16 MB
// tensor with itself as weights: 2.7 G, which outlasts libFuzzer's 10 s
// under ASan, as it would take its time anywhere). Sizes known only at run
// time (Pad by 15M rows from an initializer) are bounded by the session's
// host memory limit, far below libFuzzer's malloc limit: past it the run
// fails before allocating.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/tensor.h"
#include "ir/onnx_import.h"
#include "ir/shape_inference.h"
#include "plugin/provider.h"
#include "session/session.h"

namespace {

using namespace onyx::runtime;

constexpr uint64_t kMaxTensorBytes = uint64_t(16) << 20;
constexpr uint64_t kMaxModelBytes = uint64_t(64) << 20;
// A run's host memory: also what bounds the time of ops whose output size is
// known only at run time (with 256 MB, a Pad to 256 MB took 13 s under ASan,
// past libFuzzer's 10 s limit; with 64 MB it is refused before it starts).
constexpr size_t kMaxRunBytes = size_t(64) << 20;

// Bytes of a tensor of these dims (saturating); 0 when a dim is unknown.
uint64_t shape_bytes(int32_t dtype, const Shape& dims) {
  uint64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) return 0;
    if (d > 0 && count > UINT64_MAX / uint64_t(d)) return UINT64_MAX;
    count *= uint64_t(d);
  }
  const uint64_t size = std::max<uint64_t>(dtype_size(dtype), 1);
  return count > UINT64_MAX / size ? UINT64_MAX : count * size;
}

uint64_t known_bytes(const ir::Value& v) {
  return v.kind == ir::ValueKind::kTensor && v.rank >= 0 ? shape_bytes(v.dtype, v.dims) : 0;
}

constexpr uint64_t kMaxMultiplyAdds = uint64_t(1) << 28;

// Elements of value `v` by its inferred shape; 0 when unknown or absent.
uint64_t known_elements(const ir::Graph& g, int v) {
  if (v < 0 || size_t(v) >= g.values.size()) return 0;
  const ir::Value& value = g.values[size_t(v)];
  if (value.kind != ir::ValueKind::kTensor || value.rank < 0) return 0;
  const uint64_t bytes = shape_bytes(ONYX_DTYPE_UINT8, value.dims);
  return bytes == UINT64_MAX ? UINT64_MAX : bytes;
}

// Multiply-adds of a convolution or matrix product by the inferred shapes:
// outputs (inputs for ConvTranspose) times the weights per output channel,
// or outputs times the reduction; 0 for other nodes or unknown shapes.
uint64_t multiply_adds(const ir::Graph& g, const ir::Node& n) {
  auto input = [&](size_t k) { return k < n.inputs.size() ? n.inputs[k] : -1; };
  auto times = [](uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; };
  const bool conv = n.op_type == "Conv" || n.op_type == "ConvInteger" || n.op_type == "ConvTranspose";
  const bool qconv = n.op_type == "QLinearConv";
  if (conv || qconv) {
    const int w = input(qconv ? 3 : 1);
    const uint64_t weights = known_elements(g, w);
    const ir::Value* wv = w >= 0 && size_t(w) < g.values.size() ? &g.values[size_t(w)] : nullptr;
    if (!weights || !wv || wv->dims.empty() || wv->dims[0] <= 0) return 0;
    const uint64_t per_channel = weights / uint64_t(wv->dims[0]);
    const int over = n.op_type == "ConvTranspose" ? input(0) : (n.outputs.empty() ? -1 : n.outputs[0]);
    return times(known_elements(g, over), per_channel);
  }
  if (n.op_type == "MatMul" || n.op_type == "Gemm" || n.op_type == "MatMulInteger" || n.op_type == "QLinearMatMul") {
    const int a = input(0);
    if (a < 0 || size_t(a) >= g.values.size() || n.outputs.empty()) return 0;
    const ir::Value& av = g.values[size_t(a)];
    if (av.rank < 1 || av.dims.empty()) return 0;
    const bool trans_a = n.op_type == "Gemm" && n.attr_int("transA", 0) != 0 && av.dims.size() == 2;
    const int64_t k = trans_a ? av.dims[0] : av.dims.back();
    return k > 0 ? times(known_elements(g, n.outputs[0]), uint64_t(k)) : 0;
  }
  return 0;
}

bool small_enough(const ir::Graph& g) {
  uint64_t total = 0;
  for (const ir::Value& v : g.values) {
    const uint64_t b = known_bytes(v);
    if (b > kMaxTensorBytes) return false;
    total += b;
    if (total > kMaxModelBytes) return false;
  }
  for (const ir::Node& n : g.nodes)
    if (multiply_adds(g, n) > kMaxMultiplyAdds) return false;
  return true;
}

ProviderRegistry& registry() {
  static ProviderRegistry* r = [] {
    auto* reg = new ProviderRegistry();
    reg->add_search_dir(ONYX_FUZZ_PROVIDER_DIR);
    return reg;
  }();
  return *r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto model = ir::load_model_from_bytes(data, size, "");
  if (!model.ok()) return 0;  // model_loader covers the loader's errors
  if (!small_enough(*model->graph)) return 0;

  std::vector<std::pair<std::string, Tensor>> inputs;
  std::map<std::string, Shape> run_shapes;
  for (int v : model->graph->inputs) {
    const ir::Value& in = model->graph->values[size_t(v)];
    if (in.constant) continue;  // an initializer's default is used
    if (in.kind != ir::ValueKind::kTensor || in.rank < 0 || dtype_size(in.dtype) == 0) return 0;
    Shape dims = in.dims;
    for (int64_t& d : dims)
      if (d < 0) d = 1;
    if (shape_bytes(in.dtype, dims) > kMaxTensorBytes) return 0;
    run_shapes[in.name] = dims;
    Tensor t = Tensor::allocate(in.dtype, dims);
    std::memset(t.data(), 1, t.bytes());  // small nonzero values of every type
    inputs.emplace_back(in.name, std::move(t));
  }

  // The same bounds on the shapes the run will have (unknown input dims 1,
  // which may make large what the declared shapes left unknown: a Conv of
  // 33.6 G multiply-adds), inferred on a copy so that the session still
  // sees the model as written. A contradiction is the session's to report.
  ir::Graph probe = *model->graph;
  if (ir::infer_shapes(probe, run_shapes).ok() && !small_enough(probe)) return 0;

  SessionOptions options;
  options.providers.push_back({"cpu", {}});
  options.fallback = FallbackPolicy::kFail;
  options.intra_op_threads = 1;
  options.host_memory_limit = kMaxRunBytes;
  auto session = Session::create(registry(), std::move(*model), options);
  if (!session.ok()) {
    if (session.status().message().empty()) __builtin_trap();  // errors must say something
    return 0;
  }
  auto out = (*session)->run(inputs);
  if (!out.ok() && out.status().message().empty()) __builtin_trap();
  return 0;
}
