// abi_threads.cpp: concurrent use of the ABI's thread-safe functions.
#include "abi_threads.h"

#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "graph_view.h"

namespace onyx::conformance {

namespace {

constexpr int64_t kRows = 4, kCols = 16;

// Y = Relu(X), X float32 [4, 16], opset 14.
const OwnedGraph& relu_graph() {
  static const std::unique_ptr<OwnedGraph> graph = [] {
    onnx::GraphProto g;
    auto declare = [](onnx::ValueInfoProto* v, const char* name) {
      v->set_name(name);
      auto* t = v->mutable_type()->mutable_tensor_type();
      t->set_elem_type(onnx::TensorProto::FLOAT);
      t->mutable_shape()->add_dim()->set_dim_value(kRows);
      t->mutable_shape()->add_dim()->set_dim_value(kCols);
    };
    declare(g.add_input(), "X");
    declare(g.add_output(), "Y");
    auto* n = g.add_node();
    n->set_op_type("Relu");
    n->set_name("relu");
    n->add_input("X");
    n->add_output("Y");
    return OwnedGraph::from_onnx(g, {{"", 14}});
  }();
  return *graph;
}

bool claims_relu(const LoadedPlugin& p, const OpenDevice& device) {
  OnyxNodeClaim claim{};
  claim.struct_size = sizeof claim;
  check_status(p.api()->get_capability(device.get(), &relu_graph().view(), &claim), "get_capability");
  return claim.claimed;
}

OnyxKernel* create_relu(const LoadedPlugin& p, const OpenDevice& device) {
  OnyxKernel* kernel = nullptr;
  const uint32_t node = 0;
  check_status(p.api()->kernel_create(device.get(), &relu_graph().view(), &node, 1, &kernel), "kernel_create");
  if (!kernel) throw CaseError("kernel_create succeeded but returned no kernel");
  return kernel;
}

void compute_relu(const LoadedPlugin& p, const OpenDevice& device, OnyxKernel* kernel, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  KernelInput in;
  in.tensor.dtype = ONYX_DTYPE_FLOAT32;
  in.tensor.dims = {kRows, kCols};
  std::vector<float> x(size_t(kRows * kCols));
  for (float& v : x) v = dist(rng);
  in.tensor.bytes.assign(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  std::vector<HostTensor> out = run_kernel(p, device, kernel, {in}, 1);
  if (out[0].dtype != ONYX_DTYPE_FLOAT32 || out[0].bytes.size() != x.size() * sizeof(float))
    throw CaseError("Relu kernel produced a wrong type or size");
  std::vector<float> y(x.size());
  std::memcpy(y.data(), out[0].bytes.data(), out[0].bytes.size());
  for (size_t i = 0; i < x.size(); ++i)
    if (y[i] != (x[i] > 0 ? x[i] : 0.0f)) throw CaseError("Relu kernel computed a wrong value under this load");
}

}  // namespace

void exercise_device(const LoadedPlugin& p, const OpenDevice& device, int iterations) {
  const OnyxProviderApi* api = p.api();
  for (int it = 0; it < iterations; ++it) {
    check_status(api->plugin_availability(p.plugin()), "plugin_availability");
    if (api->device_count(p.plugin()) == 0) throw CaseError("device_count became 0");
    OnyxDeviceProperties props{};
    props.struct_size = sizeof props;
    check_status(api->device_properties(p.plugin(), 0, &props), "device_properties");
    if (std::strncmp(props.name, device.properties().name, sizeof props.name) != 0)
      throw CaseError("device_properties returned a different name under concurrent use");
    void* buf = nullptr;
    const size_t bytes = 4096;
    check_status(api->memory_alloc(device.get(), ONYX_MEMORY_DEVICE, bytes, 64, &buf), "memory_alloc");
    std::string src(bytes, char(it)), back(bytes, '\0');
    OnyxStatus* st = api->memory_copy(device.get(), nullptr, ONYX_COPY_HOST_TO_DEVICE, buf, src.data(), bytes);
    if (!st) st = api->memory_copy(device.get(), nullptr, ONYX_COPY_DEVICE_TO_HOST, back.data(), buf, bytes);
    api->memory_free(device.get(), ONYX_MEMORY_DEVICE, buf);
    check_status(st, "memory_copy");
    if (back != src) throw CaseError("a memory round trip changed the data under concurrent use");
    if (claims_relu(p, device)) {
      OnyxKernel* kernel = create_relu(p, device);
      try {
        compute_relu(p, device, kernel, uint32_t(it));
      } catch (...) {
        api->kernel_destroy(kernel);
        throw;
      }
      api->kernel_destroy(kernel);
    }
  }
}

void run_concurrently(const LoadedPlugin& p, const OpenDevice& device, int threads, int iterations) {
  OnyxKernel* shared = claims_relu(p, device) ? create_relu(p, device) : nullptr;
  std::mutex mutex;
  std::string first_error;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        OpenDevice own(p);
        for (int it = 0; it < iterations; ++it) {
          exercise_device(p, it % 2 ? own : device, 1);
          if (shared) compute_relu(p, device, shared, uint32_t(t * 1000 + it));
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (first_error.empty()) first_error = "thread " + std::to_string(t) + ": " + e.what();
      }
    });
  }
  for (auto& th : pool) th.join();
  if (shared) p.api()->kernel_destroy(shared);
  if (!first_error.empty()) throw CaseError(first_error);
}

}  // namespace onyx::conformance
