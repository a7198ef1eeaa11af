// dnnl_common.h: what every oneDNN kernel of this provider shares: the
// device's settings, plain (row-major) memory descriptors, a per-kernel cache
// of primitives keyed by input shapes, and execution with host scratch memory.
//
// Why primitives are built at compute time: a model's shapes are often only
// known per run (a symbolic batch), and oneDNN primitives are shape-specific.
// Each kernel builds one primitive per input-shape signature, once, under a
// mutex; runs after the first reuse it.
#pragma once

#include <onyx/plugin_sdk.hpp>

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace onyx::onednn {

using sdk::ComputeContext;
using sdk::NodeInfo;
using dims_t = dnnl::memory::dims;

// The process's one oneDNN CPU engine (devices share it: a CPU engine holds
// no state of its own).
const dnnl::engine& cpu_engine();
// A stream on cpu_engine() owned by the calling thread: oneDNN streams are
// not thread-safe, and creating one per primitive costs more than small ops.
dnnl::stream& thread_stream();

// Settings of an opened device, from the options given to device_open.
struct DeviceConfig {
  dnnl::engine engine = cpu_engine();
  // "allow_reduced_precision=1" and a CPU with native bf16 (AVX512-BF16 or
  // AMX): MatMul, Gemm and Conv compute with bf16 inputs and f32 accumulation.
  bool use_bf16 = false;
};

// True when the running CPU has native bf16 dot products.
bool cpu_has_native_bf16();

// A dense row-major f32 (or `type`) descriptor; rank 0 becomes {1}.
dnnl::memory::desc plain_md(const std::vector<int64_t>& dims,
                            dnnl::memory::data_type type = dnnl::memory::data_type::f32);
// A descriptor of `dims` laid out with explicit `strides`.
dnnl::memory::desc strided_md(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides);

// Attributes every primitive here uses: the scratchpad is the caller's (each
// call's BoundArgs owns one), so concurrent runs never share oneDNN's own.
dnnl::primitive_attr base_attr();

// Leaves `pd` (an int8 convolution's or matmul's, scratchpad mode user) at the
// faster of oneDNN's first implementation and its first non-AMX one. oneDNN
// 2.6 ranks its AMX kernels first wherever the CPU has AMX, yet on layers
// with few channels or small images they run up to twice as slow as its
// AVX-512 VNNI kernels (MobileNetV2 int8, batch 1: 3.7 ms with AMX, 3.0 ms
// without; ResNet-18: 4.7 ms with, 8.1 ms without). So when the first choice
// is an AMX kernel, both run on scratch buffers at the calling thread's
// thread count and the faster stays; a first choice taking over 2 ms a run
// stays untimed (large layers, where AMX wins, and session start stays
// short). Other first choices are kept as they are.
void pick_faster_int8_impl(dnnl::primitive_desc& pd, const dnnl::engine& engine);

// The arguments of one primitive kept from call to call: memory objects
// made once and pointed at each call's buffers, in the array oneDNN's C
// execute reads, and buffers owned here (a scratchpad, a bf16 copy). Making
// memory objects, a hash map of them and a scratch allocation on every call
// cost a small primitive more than its arithmetic (the MLP's last Gemm at
// batch 1, 128 x 10: 2.7 us a call with them, 1.4 us without). One call uses
// an object at a time: see BoundPool.
class BoundArgs {
 public:
  // Adds argument `arg` described by `md`, over `data` until point() moves
  // it; returns its index for point().
  size_t add(int arg, const dnnl::memory::desc& md, const dnnl::engine& engine, void* data = nullptr);
  // Adds argument `arg` as an existing memory object (read-only constants
  // such as prepacked weights, shared by every call).
  size_t add(int arg, const dnnl::memory& memory);
  // Adds argument `arg` over a zeroed buffer of md.get_size() bytes owned here
  // (a scratchpad, a converted copy); nothing when the size is 0.
  void add_owned(int arg, const dnnl::memory::desc& md, const dnnl::engine& engine);
  // Points argument `index` (from add) at `data`; the buffer must fit its descriptor.
  void point(size_t index, const void* data) { memories_[index].set_data_handle(const_cast<void*>(data)); }
  const dnnl::memory& memory(size_t index) const { return memories_[index]; }
  size_t size() const { return memories_.size(); }
  // Runs `prim` on `stream` with these arguments (no wait).
  void execute(const dnnl::primitive& prim, const dnnl::stream& stream) const;

 private:
  std::vector<dnnl::memory> memories_;
  std::vector<dnnl_exec_arg_t> args_;
  std::vector<std::unique_ptr<void, void (*)(void*)>> owned_;
};

// Binds argument `arg` of `prim` to a buffer each call points at (laid out
// as `user`): directly, or, when `convert`, through `conversion` (a reorder's
// arguments) into a buffer owned there in the layout `wanted`. Returns the
// index to point per call, in `conversion` when converting, else in `prim`.
size_t bind_input(BoundArgs& prim, BoundArgs& conversion, int arg, const dnnl::memory::desc& user,
                  const dnnl::memory::desc& wanted, bool convert, const dnnl::engine& engine);

// Binds output `arg` of `prim` as bind_input binds an input: directly to a
// buffer each call points at (laid out as `user`), or, when `convert`, to a
// buffer owned by `prim` in the layout `produced`, which `conversion` (a
// reorder's arguments) converts into the call's buffer. Returns the index to
// point per call, in `conversion` when converting, else in `prim`.
size_t bind_output(BoundArgs& prim, BoundArgs& conversion, int arg, const dnnl::memory::desc& user,
                   const dnnl::memory::desc& produced, bool convert, const dnnl::engine& engine);

// One call's arguments for a primitive whose input X and output Y may pass
// through reorders between the caller's layouts and the ones it computes in
// (bind_input and bind_output make `x` and `y`).
struct ConvertedArgs {
  BoundArgs in, main, out;  // X's reorder, the primitive, Y's reorder
  size_t x = 0, y = 0;      // indices to point: in `in` or `main`, in `out` or `main`
  // Points X and Y at this call's buffers, runs `to_main` on X when set, then
  // `prim`, then `from_main` into Y when set, on `stream` (no wait).
  void execute(const dnnl::primitive& prim, const std::optional<dnnl::reorder>& to_main,
               const std::optional<dnnl::reorder>& from_main, const void* x_data, void* y_data,
               const dnnl::stream& stream);
};

// The bound arguments (BoundArgs, or a struct of them) of one prepared
// primitive for concurrent calls: take() hands one out, made by `make` when
// none is free, and give_back() returns it, so there are as many as calls
// ever ran at once. Thread-safe.
template <typename Bound>
class BoundPool {
 public:
  template <typename Make>
  std::unique_ptr<Bound> take(Make&& make) {
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        std::unique_ptr<Bound> bound = std::move(free_.back());
        free_.pop_back();
        return bound;
      }
    }
    return make();
  }
  void give_back(std::unique_ptr<Bound> bound) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(bound));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Bound>> free_;
};

// One argument of a call: its id and this call's buffer (its descriptor is
// the primitive's own, asked of its primitive_desc when first bound).
struct ArgBuffer {
  int arg;
  const void* data;
};

// Runs `prim` with its arguments bound once per concurrent caller (from
// `calls`: the descriptors `pd` gives each argument, and the scratchpad it
// asks for) and pointed at `args`' buffers; waits for it. The arguments must
// come in the same order on every call with the same `calls`. On the threads
// chosen by the last use_threads_for() on this thread.
void execute_bound(BoundPool<BoundArgs>& calls, const dnnl::primitive& prim, const dnnl::primitive_desc_base& pd,
                   std::initializer_list<ArgBuffer> args);
void execute_bound(BoundPool<BoundArgs>& calls, const dnnl::primitive& prim, const dnnl::primitive_desc_base& pd,
                   std::span<const ArgBuffer> args);

// Sets oneDNN's (OpenMP) thread count for the primitives the calling thread
// creates and runs next: the host's intra-op thread count, but one thread
// per kWorkPerThread operations at most. OpenMP's fork/join and barriers
// cost more than small problems gain, and far more on a busy machine, where
// a descheduled thread stalls the whole team. `work` is an operation count
// (flops, or a few per element for memory-bound ops); deterministic per
// shape, so a primitive always runs on the team size it was created for.
// 1e6: with 4e6, MobileNetV2's depthwise and pointwise layers (3-7 M
// operations) ran on one thread of two; 1e6 made it 12% (int8) and 14%
// (float32) faster at batch 1 on 2 cores, and the MLP at batch 16 1.43x
// faster on two threads than one (0.96x before). Below 1e6 gained nothing.
inline constexpr double kWorkPerThread = 1e6;
void use_threads_for(ComputeContext& ctx, double work);
// The thread count use_threads_for() sets for `work`.
int threads_for(ComputeContext& ctx, double work);
// Sets the calling thread's oneDNN (OpenMP) thread count.
void use_threads(int threads);

// A reorder primitive from `from` to `to` on one engine.
inline dnnl::reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                                  const dnnl::engine& engine) {
  return dnnl::reorder(dnnl::reorder::primitive_desc(engine, from, engine, to));
}

// The input shapes of a call: the key of a kernel's primitive cache.
std::vector<int64_t> shape_key(ComputeContext& ctx);

// Caches one prepared object (primitive, descriptors, reordered weights) per
// input-shape signature. Thread-safe.
template <typename Prepared>
class ShapeCache {
 public:
  // Returns the entry for `key`, building it with `build()` (which returns a
  // shared_ptr<Prepared>, nullptr for shapes it rejects, or throws) on first use.
  // The entry for `key`, or nullptr when none was built yet.
  std::shared_ptr<const Prepared> find(const std::vector<int64_t>& key) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second;
  }

  template <typename Build>
  std::shared_ptr<const Prepared> get(const std::vector<int64_t>& key, Build&& build) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    if (entries_.size() >= 32) entries_.erase(entries_.begin());  // bound memory
    std::shared_ptr<const Prepared> made = build();
    if (made) entries_[key] = made;  // a failed build is retried, so each call gets its own error
    return made;
  }

 private:
  std::mutex mutex_;
  std::map<std::vector<int64_t>, std::shared_ptr<const Prepared>> entries_;
};

// An eltwise operation as oneDNN sees it: used both by standalone activation
// kernels and as a post-op fused after MatMul, Gemm and Conv.
struct Activation {
  dnnl::algorithm algorithm = dnnl::algorithm::undef;
  float alpha = 0.f, beta = 0.f;
};

// The activation an eltwise node computes, or "" in *reason when this
// provider cannot express it (e.g. Clip with bounds that are not constant).
bool activation_of(const NodeInfo& node, Activation* out, std::string* reason);

// Spatial-op helpers shared by Conv, ConvTranspose and pooling.
// Pads as oneDNN wants them: begin and end per spatial axis.
struct SpatialPads {
  dims_t begin, end;
};

// Reasons shared by the supports() predicates: "" when fine.
std::string require_f32(const NodeInfo& node, std::initializer_list<size_t> inputs);
std::string require_rank(const NodeInfo& node, size_t input, int min_rank, int max_rank);

// In a supports() predicate: returns the reason when `expr` gives one.
#define RETURN_IF_REASON(expr)              \
  do {                                      \
    std::string onednn_reason_ = (expr);    \
    if (!onednn_reason_.empty()) return onednn_reason_; \
  } while (0)

// True for an input that is a constant (initializer) visible at kernel creation.
inline bool is_constant(const NodeInfo& node, size_t k) {
  return node.input_present(k) && node.inputs[k].constant.has_value();
}

}  // namespace onyx::onednn
