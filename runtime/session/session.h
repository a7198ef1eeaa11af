// session.h: an inference session: a model placed on devices, compiled into
// kernels, and run with a static memory plan.
//
// Creation: import -> shape inference -> partition over the providers in
// priority order (fallback policy) -> copy insertion -> kernel creation.
// Run: bind inputs -> plan memory for these input shapes (cached) ->
// execute steps in topological order -> return outputs.
// Thread-safety: run() may be called concurrently; each run has its own arena.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ir/graph.h"
#include "plugin/provider.h"
#include "session/partition.h"

namespace onyx::runtime { struct ControlFlow; }

namespace onyx::runtime {

struct ProviderRequest {
  std::string name_or_path;
  std::vector<std::pair<std::string, std::string>> options;  // given to device_open
};

struct SessionOptions {
  std::vector<ProviderRequest> providers;  // priority order; empty = {"cpu"}
  FallbackPolicy fallback = FallbackPolicy::kWarn;
  size_t intra_op_threads = 0;  // 0: one per core
  // Given to every device as allow_reduced_precision=1 (unless its request
  // sets the key): providers may then compute in e.g. bf16.
  bool allow_reduced_precision = false;
};

// An opened device of a provider, owned by a session.
struct Device {
  std::shared_ptr<Provider> provider;
  OnyxDevice* handle = nullptr;
  OnyxDeviceProperties properties{};
  std::string label;  // "cpu" or "cuda:0"
  ~Device();
};

// One step of execution: a kernel (one node or a fused group), a copy, or a
// control-flow node the host runs (device -1; session/control_flow.h).
struct Step {
  enum Kind { kKernel, kCopy, kControlFlow } kind = kKernel;
  int device = 0;
  std::vector<int> nodes;     // graph node indices (kKernel)
  std::vector<int> inputs;    // value indices, -1 for omitted
  std::vector<int> outputs;
  OnyxKernel* kernel = nullptr;
  std::vector<OnyxOutputMemoryInfo> output_memory;
  int copy_direction = 0;     // kCopy
  std::string name;
  std::shared_ptr<ControlFlow> control_flow;  // kControlFlow: its compiled subgraphs
};

struct MemoryReport {
  std::string device;
  size_t arena_bytes = 0, lower_bound = 0;
  size_t planned_tensors = 0, dynamic_tensors = 0, in_place = 0, aliased = 0;
};

struct ExecutionPlan;  // memory plan for one set of input shapes (executor.h)

class Session {
 public:
  static StatusOr<std::unique_ptr<Session>> create(ProviderRegistry& registry, ir::Model model,
                                                   const SessionOptions& options);
  ~Session();

  const ir::Graph& graph() const { return *model_.graph; }
  const ir::Model& model() const { return model_; }
  const std::vector<std::unique_ptr<Device>>& devices() const { return devices_; }
  const std::vector<Step>& steps() const { return steps_; }
  const PartitionReport& partition_report() const { return partition_; }

  // Runs with inputs by name; returns the requested outputs (all when empty).
  // `reuse` (optional, one entry per returned output, empty entries allowed):
  // host tensors the caller owns whose memory an output of the same dtype and
  // shape is written into and returned, instead of a fresh buffer; a training
  // loop passes last step's gradients. The caller must not read or share them
  // during the run.
  StatusOr<std::vector<Tensor>> run(const std::vector<std::pair<std::string, Tensor>>& inputs,
                                    const std::vector<std::string>& output_names = {},
                                    const std::vector<Tensor>* reuse = nullptr);

  // The memory plan for the given input shapes (declared shapes, with
  // unknown dims set from `input_shapes` or to 1), per device.
  StatusOr<std::vector<MemoryReport>> memory_report(const std::map<std::string, Shape>& input_shapes);

  ThreadPool& thread_pool() { return *pool_; }

  // Runs a control-flow subgraph's session: `inputs` in graph-input order
  // (captured values last), no checks against declared types; all outputs.
  StatusOr<std::vector<Tensor>> run_subgraph(const std::vector<Tensor>& inputs);

 private:
  Session() = default;
  Status open_devices(ProviderRegistry& registry, const SessionOptions& options);
  Status build_steps(const std::vector<int>& order);
  Status create_kernels();
  // Compiles the subgraphs of kControlFlow steps into child sessions (control_flow.cpp).
  Status compile_subgraphs(ProviderRegistry& registry, const SessionOptions& options);
  StatusOr<std::shared_ptr<const ExecutionPlan>> plan_for(const std::vector<Shape>& input_shapes);

  ir::Model model_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Step> steps_;
  std::vector<int> node_device_;  // per node
  PartitionReport partition_;
  std::shared_ptr<ThreadPool> pool_;  // shared with child sessions
  std::mutex plans_mutex_;
  std::map<std::vector<Shape>, std::shared_ptr<const ExecutionPlan>> plans_;
  friend class Executor;
};

}  // namespace onyx::runtime
