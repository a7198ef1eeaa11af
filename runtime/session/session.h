// session.h: an inference session: a model placed on devices, compiled into
// kernels, and run with a static memory plan.
//
// Creation (create_from_file / create_from_bytes, or create with a model
// already imported): import -> shape inference -> partition over the
// providers in priority order (fallback policy, fused groups checked) ->
// steps in execution order -> copy insertion -> kernel creation -> control
// flow subgraphs compiled into child sessions.
// Run: bind inputs -> the execution plan for these input shapes (cached) ->
// lease arenas -> execute the steps in order -> return outputs.
// Ownership: the session owns its graph, devices, steps and their kernels,
// plans and arena pool; it must not outlive the registry's providers it
// opened (it holds them by shared_ptr, so it cannot).
// Thread-safety: run() and memory_report() may be called concurrently; each
// run has its own slots and arenas.
// Messages: warnings go to the registry's logger, and so do the lines its
// plugins log while working for the session (core/log.h).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/host_buffer_pool.h"
#include "core/thread_pool.h"
#include "core/value.h"
#include "ir/graph.h"
#include "plugin/provider.h"
#include "session/arena_pool.h"
#include "session/device.h"
#include "session/device_io.h"
#include "session/device_policy.h"
#include "session/partition.h"
#include "session/plan.h"
#include "session/profiler.h"
#include "session/run_state.h"
#include "session/run_streams.h"
#include "session/step.h"

namespace onyx::runtime {

struct ProviderRequest {
  std::string name_or_path;
  // Given to device_open, except the host's "device" (device_choice.h):
  // which device to open, by index or stable id (default: device 0).
  std::vector<std::pair<std::string, std::string>> options;
};

struct SessionOptions {
  std::vector<ProviderRequest> providers;  // priority order; empty = {"cpu"} (or the device policy's)
  // For applications that name no providers: the devices are chosen by these
  // rules (device_policy.h); kNone with no providers opens "cpu".
  DevicePolicy device_policy = DevicePolicy::kNone;
  FallbackPolicy fallback = FallbackPolicy::kWarn;
  size_t intra_op_threads = 0;  // 0: one per core
  // Given to every device as allow_reduced_precision=1 (unless its request
  // sets the key): providers may then compute in e.g. bf16.
  bool allow_reduced_precision = false;
  // Provider-neutral rewrites before partitioning (optimize/graph_optimizer.h).
  GraphOptimization graph_optimization = GraphOptimization::kAll;
  // The most host memory one run may place tensors in: its arena, and each
  // tensor a kernel sizes at run time. 0: the machine's physical memory (a
  // larger limit is lowered to it). A run past it fails with OUT_OF_MEMORY
  // before allocating; a server bounds what one request can make it hold.
  size_t host_memory_limit = 0;
  // An intra-op pool to run on instead of one of the session's own (of
  // intra_op_threads threads): sessions that take turns share one, so that
  // one's workers, spinning after its run (thread_pool.h), never hold the
  // cores the next one's run needs. Null: the session makes its own.
  std::shared_ptr<ThreadPool> thread_pool;
  // Devices to share with other sessions given the same set (device.h):
  // a device already open there with the same provider, index and options
  // is used instead of opening another. Null: the session opens its own.
  std::shared_ptr<SharedDevices> shared_devices;
  // Compiled-partition cache folder (session/compiled_cache.h); "" = off.
  // Kernels of providers that serialize them (ABI 1.2) are stored there and
  // loaded instead of compiled by later sessions with the same key.
  std::string compiled_cache_dir;
};

class Session {
 public:
  static StatusOr<std::unique_ptr<Session>> create(ProviderRegistry& registry, ir::Model model,
                                                   const SessionOptions& options);
  // Imports an ONNX file (external data resolved in its folder), then create().
  static StatusOr<std::unique_ptr<Session>> create_from_file(ProviderRegistry& registry, const std::string& path,
                                                             const SessionOptions& options);
  // Imports a serialized model (external data refused), then create().
  static StatusOr<std::unique_ptr<Session>> create_from_bytes(ProviderRegistry& registry, const void* data,
                                                              size_t size, const SessionOptions& options);
  ~Session();

  // The model's graph, plus one value per copy step (copy_insertion.h).
  const ir::Graph& graph() const { return *model_.graph; }
  const ir::Model& model() const { return model_; }
  const DeviceList& devices() const { return devices_; }
  const std::vector<Step>& steps() const { return steps_; }
  // Per graph output: the value a run returns it from (host-readable).
  const std::vector<int>& output_values() const { return output_values_; }
  const PartitionReport& partition_report() const { return partition_; }
  // Where runs put the outputs they return (buffers the caller dropped come back).
  HostBufferPool& output_buffers() const { return *output_buffers_; }
  // How create_with_device_policy chose this session's devices (device_policy.h).
  void set_device_policy_report(DevicePolicyReport report) { partition_.device_policy = std::move(report); }

  // Runs with inputs by name; returns the requested outputs (all when empty).
  // `reuse` (optional, one entry per returned output, empty entries allowed):
  // host tensors the caller owns whose memory an output of the same dtype and
  // shape is written into and returned, instead of a fresh buffer; a training
  // loop passes last step's gradients. The caller must not read or share them
  // during the run.
  // Fails when a requested output is a sequence or optional (run_values).
  StatusOr<std::vector<Tensor>> run(const std::vector<std::pair<std::string, Tensor>>& inputs,
                                    const std::vector<std::string>& output_names = {},
                                    const std::vector<Tensor>* reuse = nullptr);
  // As run, for models whose inputs or outputs are sequences or optionals
  // (core/value.h). A graph input declared optional and not given is an
  // empty optional.
  StatusOr<std::vector<Value>> run_values(const std::vector<std::pair<std::string, Value>>& inputs,
                                          const std::vector<std::string>& output_names = {});

  // As run, with inputs and outputs that may live in device memory
  // (device_io.h): an input's `device` says which of devices() holds it; an
  // output entry names the output and where it should be: a tensor to write
  // into (host, or device memory of devices()[device]), or an empty tensor
  // with a device (a new device tensor) or with -1 (a new host tensor).
  // Returns the outputs in the order named. An output computed on the device
  // it is bound to is copied within that device, never through the host
  // (run_bound.cpp).
  StatusOr<std::vector<BoundTensor>> run_bound(const std::vector<std::pair<std::string, BoundTensor>>& inputs,
                                               const std::vector<std::pair<std::string, BoundTensor>>& outputs);
  // Copies of constants (initializers) that devices read, uploaded once at
  // creation: copy-step output value -> device tensor. Runs read them in
  // place instead of copying the constant (session_device.cpp).
  const std::map<int, Tensor>& resident_constants() const { return resident_; }
  // The index of `device` in devices(), -1 when it is not one of them.
  int device_index(const Device* device) const;

  // The memory plan for the given input shapes (declared shapes, with
  // unknown dims set from `input_shapes` or to 1), per device.
  StatusOr<std::vector<MemoryReport>> memory_report(const std::map<std::string, Shape>& input_shapes);

  // Profiling (profiler.h): while on, every run records an event per step
  // and one for itself. start restarts with an empty trace; end stops and
  // returns the trace (FAILED_PRECONDITION when off). Thread-safe, also while
  // runs are in flight (each run records into the profiler it began with).
  void start_profiling();
  StatusOr<std::string> end_profiling();
  std::shared_ptr<Profiler> profiler() const { return std::atomic_load(&profiler_); }

  ThreadPool& thread_pool() { return *pool_; }
  ArenaPool& arena_pool() { return *arenas_; }
  StreamPool& stream_pool() { return *streams_; }
  BlockCache& block_cache() { return *blocks_; }
  SlotCache& slot_cache() { return slot_cache_; }
  // SessionOptions::host_memory_limit resolved: never above the machine's memory.
  const HostMemoryLimit& host_memory_limit() const { return memory_limit_; }
  // The registry's logger: the session's warnings and its plugins' lines.
  const Logger& logger() const { return *logger_; }

  // Stops every run of this session now in progress, and the control-flow
  // subgraphs they run, at their next step or loop iteration, with an error
  // naming where it stopped; runs that start later are not affected. The way
  // to bound a run that is valid but too long (a Loop of 3^25 iterations).
  // Thread-safe; callable from any thread, e.g. a watchdog.
  void cancel_runs() { cancels_->fetch_add(1, std::memory_order_relaxed); }
  // Changes whenever cancel_runs() is called: a run remembers it at its start.
  uint64_t cancel_generation() const { return cancels_->load(std::memory_order_relaxed); }

  // Runs a control-flow subgraph's session: `inputs` in graph-input order
  // (captured values last), no checks against declared types; all outputs.
  StatusOr<std::vector<Value>> run_subgraph(const std::vector<Value>& inputs);

 private:
  Session() = default;
  StatusOr<std::vector<Value>> run_impl(const std::vector<std::pair<std::string, Value>>& inputs,
                                        const std::vector<std::string>& output_names,
                                        const std::vector<Tensor>* reuse,
                                        const DeviceBinding* binding = nullptr);
  Status open_devices(ProviderRegistry& registry, const SessionOptions& options);
  Status build_steps();
  Status create_kernels(const SessionOptions& options);
  void log_compiled_cache_summary() const;
  Status upload_constants();
  // Compiles the subgraphs of kControlFlow steps into child sessions (control_flow.cpp).
  Status compile_subgraphs(ProviderRegistry& registry, const SessionOptions& options);
  void share_cancels(const std::shared_ptr<std::atomic<uint64_t>>& cancels);
  StatusOr<std::shared_ptr<const ExecutionPlan>> plan_for(const std::vector<Shape>& input_shapes);

  ir::Model model_;
  std::shared_ptr<Logger> logger_;
  DeviceList devices_;
  // devices_.back() is the CPU provider added after the listed providers
  // under 'warn'/'allow' (open_devices), dropped again when no node uses it.
  bool implicit_cpu_ = false;
  HostMemoryLimit memory_limit_;
  std::unique_ptr<ArenaPool> arenas_;  // destroyed before the devices close
  std::unique_ptr<BlockCache> blocks_;   // likewise
  std::unique_ptr<StreamPool> streams_;  // likewise
  std::vector<Step> steps_;
  std::vector<int> output_values_;
  // Graph input name -> its position: a run binds its inputs by name (the
  // CNN's optimizer step: 58 of them, a linear search each cost 25 us).
  std::unordered_map<std::string, size_t> input_positions_;
  std::map<int, Tensor> resident_;  // destroyed before the devices close
  PartitionReport partition_;
  std::shared_ptr<ThreadPool> pool_;  // shared with child sessions
  std::shared_ptr<HostBufferPool> output_buffers_ = std::make_shared<HostBufferPool>();
  std::shared_ptr<Profiler> profiler_;  // null when off; read and swapped atomically
  // cancel_runs() count, shared with child sessions so that one call stops them all.
  std::shared_ptr<std::atomic<uint64_t>> cancels_ = std::make_shared<std::atomic<uint64_t>>(0);
  SlotCache slot_cache_;  // run_state.h
  std::mutex plans_mutex_;
  std::map<std::vector<Shape>, std::shared_ptr<const ExecutionPlan>> plans_;
};

}  // namespace onyx::runtime
