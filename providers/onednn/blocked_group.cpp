// The kernel of a blocked-layout group (blocked_group.h): a list of steps
// built at kernel creation, and per input-shape signature a plan of oneDNN
// primitives, layouts, arena offsets and prepacked weights built on first run.
#include "blocked_group.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "spatial.h"

namespace onyx::onednn {
namespace {

using dt = dnnl::memory::data_type;

// Where a step's data input comes from: a slot of the arena, or a group input.
struct Source {
  bool internal = false;
  size_t index = 0;
};

struct Step {
  enum class Kind { kConv, kPool, kEltwise, kAdd } kind = Kind::kEltwise;
  std::string name;
  ConvAttrs conv;
  std::vector<float> weights;  // ONNX layout, BatchNormalization folded in
  std::vector<int64_t> weight_dims;
  std::optional<std::vector<float>> bias;
  PoolSpec pool;
  Activation act;                 // kEltwise
  std::vector<Activation> post;   // fused after kConv and kAdd
  std::vector<Source> inputs;
  size_t slot = 0;                // where its output goes
};

struct SlotInfo {
  int output_index = -1;  // the group output it is (-1: internal only)
  size_t last_use = 0;    // the last step reading it
};

// Per input shapes: everything a run needs.
struct PlannedInput {
  dnnl::memory::desc md;                 // as the primitive reads it
  dnnl::memory::desc source_md;          // as its source holds it
  std::optional<dnnl::reorder> reorder;  // from source_md into `temp`
  size_t temp = 0;
};
struct PlannedStep {
  dnnl::primitive prim;
  std::vector<PlannedInput> inputs;
  dnnl::memory weights, bias;
  size_t scratch_bytes = 0;
  int threads = 1;
  bool swapped = false;       // Add: operands exchanged
  bool max_pool_2x2 = false;  // run by max_pool_2x2_blocked, not a primitive
  int block = 8;              // its channel block
  std::vector<int64_t> pool_input_dims;  // and its input's dimensions
};
// One call's bound arguments (BoundArgs), made once per concurrent caller:
// its own arena, and per step the reorders of its inputs, the primitive's
// arguments and the reorder of a group output to plain, all over that arena.
// A call only points the group's inputs and outputs at its tensors.
struct GroupCall {
  struct StepArgs {
    std::vector<BoundArgs> input_reorders;  // per input; empty when it needs none
    std::vector<size_t> input_index;        // per group input read: its argument index, in
                                            // its reorder's arguments or else in `prim`'s
    BoundArgs prim;                         // (none for the 2x2 max pooling loop)
    BoundArgs to_plain;                     // a group output not already plain
    const float* pool_src = nullptr;        // 2x2 max pooling loop: its input in the arena
  };
  std::unique_ptr<void, void (*)(void*)> arena{nullptr, std::free};
  std::vector<StepArgs> steps;
};

struct Plan {
  std::vector<PlannedStep> steps;
  std::vector<dnnl::memory::desc> slot_md;
  std::vector<std::vector<int64_t>> slot_dims;
  std::vector<size_t> slot_offset;
  std::vector<std::optional<dnnl::reorder>> slot_to_plain;  // group outputs not already plain
  size_t arena_bytes = 0, scratch_offset = 0;
  mutable BoundPool<GroupCall> calls;
};

// How a call's batch runs: in chunks of images, each through every step
// before the next chunk starts, so that a chunk's activations stay in the
// core's L2 cache; chunks run in parallel on the host's threads, each
// chunk's primitives on one thread (no OpenMP team and its barriers per
// step). A batch that fits runs whole, its primitives threaded as planned.
struct Schedule {
  int64_t batch = 0, chunk = 0;         // images in all, per chunk
  std::shared_ptr<const Plan> whole;    // the chunk's plan (the whole batch when chunk == batch)
  std::shared_ptr<const Plan> tail;     // batch % chunk images, when not 0
};

// L2 bytes a chunk's arena may fill: half the core's L2 (the other half
// for weights and what the primitives stream through).
size_t chunk_budget() {
  static const size_t budget = [] {
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return size_t(l2 > 0 ? l2 : 1 << 20) / 2;
  }();
  return budget;
}

// First-fit offsets for buffers live over step ranges.
class ArenaLayout {
 public:
  size_t place(size_t bytes, size_t first_step, size_t last_step) {
    bytes = (bytes + 63) / 64 * 64;
    std::erase_if(live_, [&](const Block& b) { return b.last_step < first_step; });
    std::sort(live_.begin(), live_.end(), [](const Block& a, const Block& b) { return a.offset < b.offset; });
    size_t offset = 0;
    for (const Block& b : live_) {
      if (b.offset >= offset + bytes) break;
      offset = std::max(offset, b.offset + b.bytes);
    }
    live_.push_back({offset, bytes, last_step});
    peak_ = std::max(peak_, offset + bytes);
    return offset;
  }
  size_t peak() const { return peak_; }

 private:
  struct Block {
    size_t offset, bytes, last_step;
  };
  std::vector<Block> live_;
  size_t peak_ = 0;
};

// Channels per block in oneDNN's blocked layouts on this CPU.
int channel_block() {
  auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return isa >= static_cast<unsigned>(dnnl::cpu_isa::avx512_core) ? 16 : 8;
}

// `dims` (N, C, spatial...) with channels in blocks of the SIMD width, as
// oneDNN's own convolutions choose them.
dnnl::memory::desc channel_blocked_md(const std::vector<int64_t>& dims) {
  using tag = dnnl::memory::format_tag;
  bool wide = channel_block() == 16;
  tag t = dims.size() == 3 ? (wide ? tag::nCw16c : tag::nCw8c)
          : dims.size() == 4 ? (wide ? tag::nChw16c : tag::nChw8c)
                             : (wide ? tag::nCdhw16c : tag::nCdhw8c);
  return dnnl::memory::desc(dims_t(dims.begin(), dims.end()), dt::f32, t);
}

// Max pooling over 2x2 windows of stride 2, no padding or dilation, on a
// 2-D input: the CNN classic, where oneDNN 2.6's jit:avx2 pooling is slow
// (0.66 ms for 64x8x28x28 on nChw8c, against 0.15 ms for the loop below).
bool is_max_pool_2x2(const PoolSpec& spec, const std::vector<int64_t>& x, const PoolGeometry& g) {
  auto all = [](const dims_t& v, int64_t want) {
    return std::all_of(v.begin(), v.end(), [&](int64_t d) { return d == want; });
  };
  return spec.max && x.size() == 4 && g.kernel.size() == 2 && all(g.kernel, 2) && all(g.strides, 2) &&
         all(g.dilates, 0) && all(g.pad_begin, 0) && all(g.pad_end, 0);
}

// One output row of 2x2/2 max pooling over channel blocks of one Vec each:
// per output column, the maximum of four vectors, written as whole vectors
// (the scalar loop the compiler made of a per-float loop here was 28% of the
// CNN's time at batch 64).
typedef float Floats8 __attribute__((vector_size(32)));
typedef float Floats16 __attribute__((vector_size(64)));

template <typename Vec>
__attribute__((always_inline)) inline void max_pool_2x2_row(const float* top, const float* bottom, float* out, int64_t ow) {
  constexpr int64_t kBlock = sizeof(Vec) / sizeof(float);
  for (int64_t j = 0; j < ow; ++j) {
    const float *t = top + 2 * j * kBlock, *u = bottom + 2 * j * kBlock;
    Vec a, b, c, d;
    std::memcpy(&a, t, sizeof a);
    std::memcpy(&b, t + kBlock, sizeof b);
    std::memcpy(&c, u, sizeof c);
    std::memcpy(&d, u + kBlock, sizeof d);
    a = a < b ? b : a;  // std::max, lane by lane
    c = c < d ? d : c;
    a = a < c ? c : a;
    std::memcpy(out + j * kBlock, &a, sizeof a);
  }
}

// Rows [first, last) of the output (a row: one image, channel block and
// output row), for this CPU's widest vectors.
__attribute__((target_clones("avx512f", "avx2", "default"))) void max_pool_2x2_rows(
    const float* x, float* y, int block, int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t first, int64_t last) {
  for (int64_t r = first; r < last; ++r) {
    const int64_t b = r / oh, i = r % oh;
    const float* top = x + ((b * h + 2 * i) * w) * block;
    float* out = y + ((b * oh + i) * ow) * block;
    if (block == 16)
      max_pool_2x2_row<Floats16>(top, top + w * 16, out, ow);
    else
      max_pool_2x2_row<Floats8>(top, top + w * 8, out, ow);
  }
}

// y = 2x2/2 max pooling of x, both in channel blocks of `block` (nChw8c or
// nChw16c). Padded channels stay zero.
void max_pool_2x2_blocked(const float* x, float* y, const std::vector<int64_t>& x_dims,
                          const std::vector<int64_t>& y_dims, int block, int threads) {
  const int64_t blocks = x_dims[0] * ((x_dims[1] + block - 1) / block);
  const int64_t h = x_dims[2], w = x_dims[3], oh = y_dims[2], ow = y_dims[3];
  const int64_t rows = blocks * oh;
  if (threads <= 1) return max_pool_2x2_rows(x, y, block, h, w, oh, ow, 0, rows);
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    max_pool_2x2_rows(x, y, block, h, w, oh, ow, rows * t / n, rows * (t + 1) / n);
  }
}

class BlockedGroupKernel : public sdk::Kernel {
 public:
  BlockedGroupKernel(std::vector<Step> steps, std::vector<SlotInfo> slots, const DeviceConfig& config)
      : steps_(std::move(steps)), slots_(std::move(slots)), engine_(config.engine), use_bf16_(config.use_bf16) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    std::vector<int64_t> key = shape_key(ctx);
    key.push_back(int64_t(ctx.thread_count()));
    std::string err;
    auto schedule = schedules_.get(key, [&] { return make_schedule(ctx, &err); });
    if (!schedule) return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s", err.c_str());
    // Group inputs and outputs, and their bytes per image.
    const int64_t batch = schedule->batch;
    std::vector<const char*> inputs(ctx.input_count());
    std::vector<size_t> input_image(ctx.input_count());
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::optional<sdk::Tensor> t = ctx.input(k);
      if (!t) continue;
      inputs[k] = static_cast<const char*>(t->raw);
      input_image[k] = batch > 0 ? size_t(t->size() / batch) * sizeof(float) : 0;
    }
    std::vector<char*> outputs(slots_.size());
    std::vector<size_t> output_image(slots_.size());
    const Plan& first = *schedule->whole;
    for (size_t slot = 0; slot < slots_.size(); ++slot) {
      if (slots_[slot].output_index < 0) continue;
      std::vector<int64_t> dims = first.slot_dims[slot];
      if (schedule->chunk != batch) dims[0] = batch;  // the chunk's plan
      sdk::Tensor y;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(size_t(slots_[slot].output_index), ONYX_DTYPE_FLOAT32, dims, &y));
      outputs[slot] = static_cast<char*>(y.raw);
      output_image[slot] = batch > 0 ? size_t(y.size() / batch) * sizeof(float) : 0;
    }
    if (batch == 0) return nullptr;
    // Images [n0, n0 + plan's batch) through every step.
    auto run_chunk = [&](const Plan& plan, int64_t n0) {
      std::vector<const char*> in(inputs.size());
      for (size_t k = 0; k < in.size(); ++k) in[k] = inputs[k] ? inputs[k] + size_t(n0) * input_image[k] : nullptr;
      std::vector<char*> out(outputs.size());
      for (size_t k = 0; k < out.size(); ++k) out[k] = outputs[k] ? outputs[k] + size_t(n0) * output_image[k] : nullptr;
      std::unique_ptr<GroupCall> call = plan.calls.take([&] { return bind(plan); });
      if (!call) return false;
      run(plan, *call, in, out);
      plan.calls.give_back(std::move(call));
      return true;
    };
    const int64_t chunk = schedule->chunk, chunks = (batch + chunk - 1) / chunk;
    if (chunks == 1) {
      if (!run_chunk(first, 0)) return sdk::make_status(ONYX_STATUS_OUT_OF_MEMORY, "oneDNN group: cannot allocate its arena");
      return nullptr;
    }
    // On oneDNN's OpenMP threads, not the host pool's: after oneDNN
    // primitives libgomp's threads spin for about a millisecond
    // (GOMP_SPINCOUNT=20000, shim.cpp), holding the cores a host worker
    // needs (the small CNN at batch 64 on 2 threads: the second chunk began
    // 220 us late, and 2 threads ran slower than 1). No exception may leave
    // the threads; the first error is kept.
    std::mutex failure_mutex;
    std::string failure;
    const int threads = int(std::clamp<int64_t>(int64_t(ctx.thread_count()), 1, chunks));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t n0 = c * chunk;
      std::string why;
      try {
        if (!run_chunk(n0 + chunk <= batch ? first : *schedule->tail, n0)) why = "cannot allocate its arena";
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (!why.empty()) {
        std::lock_guard lock(failure_mutex);
        if (failure.empty()) failure = why;
      }
    }
    if (!failure.empty()) return sdk::make_status(ONYX_STATUS_INTERNAL, "oneDNN group: %s", failure.c_str());
    return nullptr;
  }

 private:
  // The arguments of every step over a fresh arena; nullptr when the arena
  // cannot be allocated.
  std::unique_ptr<GroupCall> bind(const Plan& plan) const {
    auto call = std::make_unique<GroupCall>();
    size_t bytes = std::max<size_t>((plan.arena_bytes + 4095) / 4096 * 4096, 4096);
    call->arena.reset(std::aligned_alloc(4096, bytes));
    if (!call->arena) return nullptr;
    char* arena = static_cast<char*>(call->arena.get());
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& step = steps_[i];
      const PlannedStep& p = plan.steps[i];
      GroupCall::StepArgs& a = call->steps.emplace_back();
      // Per input: the memory the step reads, the source over the arena (or
      // to be pointed at the group input), through a reorder when planned.
      std::vector<dnnl::memory> in;
      for (size_t k = 0; k < step.inputs.size(); ++k) {
        const Source& src = step.inputs[k];
        dnnl::memory::desc src_md = src.internal ? plan.slot_md[src.index] : dnnl::memory::desc();
        BoundArgs& r = a.input_reorders.emplace_back();
        if (p.inputs[k].reorder) {
          size_t from = src.internal ? r.add(DNNL_ARG_FROM, src_md, engine_, arena + plan.slot_offset[src.index])
                                     : r.add(DNNL_ARG_FROM, p.inputs[k].source_md, engine_);
          r.add(DNNL_ARG_TO, p.inputs[k].md, engine_, arena + p.inputs[k].temp);
          if (!src.internal) a.input_index.push_back(from);
          in.push_back(r.memory(1));
        } else if (src.internal) {
          in.emplace_back(src_md, engine_, arena + plan.slot_offset[src.index]);
        } else {
          in.emplace_back(p.inputs[k].md, engine_, nullptr);  // no buffer: pointed per call
        }
      }
      dnnl::memory out(plan.slot_md[step.slot], engine_, arena + plan.slot_offset[step.slot]);
      if (p.max_pool_2x2) {
        a.pool_src = static_cast<const float*>(in[0].get_data_handle());
      } else {
        auto add_input = [&](int arg, size_t k) {
          size_t index = a.prim.add(arg, in[k]);
          if (!step.inputs[k].internal && !p.inputs[k].reorder) a.input_index.push_back(index);
        };
        if (step.kind == Step::Kind::kAdd) {
          add_input(DNNL_ARG_SRC_0, p.swapped ? 1 : 0);
          add_input(DNNL_ARG_SRC_1, p.swapped ? 0 : 1);
        } else {
          add_input(DNNL_ARG_SRC, 0);
        }
        a.prim.add(DNNL_ARG_DST, out);
        if (p.weights) a.prim.add(DNNL_ARG_WEIGHTS, p.weights);
        if (p.bias) a.prim.add(DNNL_ARG_BIAS, p.bias);
        if (p.scratch_bytes)
          a.prim.add(DNNL_ARG_SCRATCHPAD,
                     dnnl::memory::desc({int64_t(p.scratch_bytes)}, dt::u8, dnnl::memory::format_tag::a), engine_,
                     arena + plan.scratch_offset);
      }
      if (plan.slot_to_plain[step.slot]) {
        a.to_plain.add(DNNL_ARG_FROM, out);
        a.to_plain.add(DNNL_ARG_TO, plain_md(plan.slot_dims[step.slot]), engine_);  // pointed per call
      }
    }
    return call;
  }

  // Every step of `plan` over `call`'s arena, reading the group inputs at
  // `inputs` (per kernel input) and writing the outputs at `outputs` (per slot).
  void run(const Plan& plan, GroupCall& call, const std::vector<const char*>& inputs,
           const std::vector<char*>& outputs) const {
    dnnl::stream& stream = thread_stream();
    char* arena = static_cast<char*>(call.arena.get());
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& step = steps_[i];
      const PlannedStep& p = plan.steps[i];
      GroupCall::StepArgs& a = call.steps[i];
      use_threads(p.threads);
      // Group inputs: point the arguments that read them at this call's tensors.
      const float* pool_src = a.pool_src;
      size_t next = 0;
      for (size_t k = 0; k < step.inputs.size(); ++k) {
        if (step.inputs[k].internal) continue;
        const char* data = inputs[step.inputs[k].index];
        if (p.inputs[k].reorder)
          a.input_reorders[k].point(a.input_index[next++], data);
        else if (p.max_pool_2x2)
          pool_src = reinterpret_cast<const float*>(data);
        else
          a.prim.point(a.input_index[next++], data);
      }
      for (size_t k = 0; k < step.inputs.size(); ++k)
        if (p.inputs[k].reorder) a.input_reorders[k].execute(*p.inputs[k].reorder, stream);
      char* out = arena + plan.slot_offset[step.slot];
      if (p.max_pool_2x2) {
        max_pool_2x2_blocked(pool_src, reinterpret_cast<float*>(out), p.pool_input_dims, plan.slot_dims[step.slot],
                             p.block, p.threads);
      } else {
        a.prim.execute(p.prim, stream);
      }
      if (char* y = outputs[step.slot]) {
        if (plan.slot_to_plain[step.slot]) {
          a.to_plain.point(1, y);
          a.to_plain.execute(*plan.slot_to_plain[step.slot], stream);
        } else {
          std::memcpy(y, out, plan.slot_md[step.slot].get_size());
        }
      }
    }
    stream.wait();
  }

  // The plans of a call: the whole batch when it fits the cache budget on
  // one thread, else chunks (see Schedule).
  std::shared_ptr<Schedule> make_schedule(ComputeContext& ctx, std::string* err) const {
    auto schedule = std::make_shared<Schedule>();
    const Plan* whole = nullptr;
    // The batch: the first dimension of the group inputs (images go through
    // each step independently); inputs that disagree run whole.
    int64_t batch = -1;
    bool one_batch = true;
    for (const Step& step : steps_)
      for (const Source& src : step.inputs) {
        if (src.internal) continue;
        sdk::Tensor t = ctx.in(src.index);
        int64_t n = t.rank() ? t.dim(0) : 1;
        one_batch = one_batch && (batch < 0 || n == batch);
        batch = n;
      }
    schedule->batch = schedule->chunk = batch;
    auto full = prepare(ctx, -1, int(ctx.thread_count()), err);
    if (!full) return nullptr;
    whole = full.get();
    schedule->whole = full;
    if (batch <= 1 || !one_batch) return schedule;
    const size_t per_image = whole->arena_bytes / size_t(batch);
    const int64_t threads = int64_t(std::max<size_t>(ctx.thread_count(), 1));
    // As many chunks as the budget needs, a multiple of the threads (each
    // thread the same share), equal sizes but the last.
    int64_t fit = std::max<int64_t>(int64_t(chunk_budget() / std::max<size_t>(per_image, 1)), 1);
    int64_t chunks = (batch + fit - 1) / fit;
    chunks = std::min((chunks + threads - 1) / threads * threads, batch);
    int64_t chunk = (batch + chunks - 1) / chunks;
    if (chunk >= batch) return schedule;
    schedule->chunk = chunk;
    schedule->whole = prepare(ctx, chunk, 1, err);
    if (batch % chunk) schedule->tail = prepare(ctx, batch % chunk, 1, err);
    if (!schedule->whole || (batch % chunk && !schedule->tail)) return nullptr;
    return schedule;
  }

  // The plan for `batch` images (the group inputs' first dimension; -1: as
  // given) whose primitives use at most `max_threads` threads.
  std::shared_ptr<Plan> prepare(ComputeContext& ctx, int64_t batch, int max_threads, std::string* err) const {
    auto plan = std::make_shared<Plan>();
    plan->slot_md.resize(slots_.size());
    plan->slot_dims.resize(slots_.size());
    plan->slot_offset.resize(slots_.size());
    plan->slot_to_plain.resize(slots_.size());
    ArenaLayout layout;
    size_t scratch = 0;
    dnnl::stream& stream = thread_stream();
    auto source_dims = [&](const Source& s) {
      if (s.internal) return plan->slot_dims[s.index];
      std::vector<int64_t> dims = ctx.in(s.index).shape();
      if (!dims.empty() && batch >= 0) dims[0] = batch;
      return dims;
    };
    auto source_md = [&](const Source& s) {
      return s.internal ? plan->slot_md[s.index] : plain_md(source_dims(s));
    };
    auto team = [&](double work) { return std::min(threads_for(ctx, work), max_threads); };
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& step = steps_[i];
      PlannedStep p;
      std::vector<int64_t> x = source_dims(step.inputs[0]);
      dnnl::memory::desc x_md = source_md(step.inputs[0]);
      dnnl::primitive_attr attr = base_attr();
      dnnl::post_ops ops;
      for (const Activation& act : step.post) ops.append_eltwise(1.f, act.algorithm, act.alpha, act.beta);
      attr.set_post_ops(ops);
      std::vector<dnnl::memory::desc> wanted;  // per input, the layout the primitive reads
      dnnl::memory::desc y_md;
      std::vector<int64_t> y_dims;
      size_t elements = size_t(sdk::element_count(x));
      if (step.kind == Step::Kind::kConv) {
        ConvGeometry g;
        if (!conv_geometry(step.conv, x, step.weight_dims, &g, err)) {
          *err = "Conv '" + step.name + "': " + *err;
          return nullptr;
        }
        p.threads = team(conv_work(x, step.weight_dims));
        use_threads(p.threads);
        auto any = dnnl::memory::format_tag::any;
        // A layer on few input channels (a network's first) writes channel
        // blocks, which takes oneDNN's direct JIT kernel: left to choose, it
        // takes NHWC and its batch-reduce kernel on AVX-512, 1.9x slower for
        // 1 -> 8 channels at 28 x 28.
        dnnl::memory::desc dst_md = g.src.size() == 4 && g.src[1] <= 4 ? channel_blocked_md(g.dst)
                                                                        : dnnl::memory::desc(g.dst, dt::f32, any);
        dnnl::memory::desc bias_md = step.bias ? plain_md({g.dst[1]}) : dnnl::memory::desc();
        // With reduced precision allowed, layers on >= 16 input channels per
        // group read bf16 (their input converted where the layout changes
        // anyway, the weights once) and write float32: the bf16 kernels lose
        // to float32 ones on fewer channels (1 -> 8 channels: 2.8x slower).
        const dt in_type = use_bf16_ && step.weight_dims[1] >= 16 ? dt::bf16 : dt::f32;
        dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                             dnnl::memory::desc(g.src, in_type, any),
                                             dnnl::memory::desc(g.weights, in_type, any), bias_md,
                                             dst_md, g.strides, g.dilates,
                                             g.pad_begin, g.pad_end);
        dnnl::convolution_forward::primitive_desc pd(desc, attr, engine_);
        p.prim = dnnl::convolution_forward(pd);
        p.scratch_bytes = pd.scratchpad_desc().get_size();
        wanted.push_back(pd.src_desc());
        y_md = pd.dst_desc();
        y_dims = g.onnx_out;
        // Weights prepacked once per shape, in the layout the primitive wants.
        p.weights = dnnl::memory(pd.weights_desc(), engine_);
        dnnl::memory user(dnnl::memory::desc(g.weights, dt::f32, g.user_weight_strides), engine_,
                          const_cast<float*>(step.weights.data()));
        dnnl::reorder(user, p.weights).execute(stream, user, p.weights);
        if (step.bias) {
          p.bias = dnnl::memory(bias_md, engine_);
          std::memcpy(p.bias.get_data_handle(), step.bias->data(), step.bias->size() * sizeof(float));
        }
      } else if (step.kind == Step::Kind::kPool) {
        // Plain memory would get oneDNN's simple_nchw pooling: reorder it.
        if (x_md == plain_md(x)) x_md = channel_blocked_md(x);
        PoolGeometry g;
        if (!pool_geometry(step.pool, x, &g, err)) {
          *err = "pooling '" + step.name + "': " + *err;
          return nullptr;
        }
        y_dims = g.out;
        if (is_max_pool_2x2(step.pool, x, g) && x_md == channel_blocked_md(x)) {
          p.max_pool_2x2 = true;
          p.block = channel_block();
          p.pool_input_dims = x;
          p.threads = team(double(elements));
          wanted.push_back(x_md);
          y_md = channel_blocked_md(g.out);
        } else {
          double window = 1;
          for (int64_t k : g.kernel) window *= double(k);
          p.threads = team(double(elements) * window);
          use_threads(p.threads);
          auto alg = step.pool.max                 ? dnnl::algorithm::pooling_max
                     : step.pool.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                   : dnnl::algorithm::pooling_avg_exclude_padding;
          dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, alg, x_md,
                                              dnnl::memory::desc(g.out, dt::f32, dnnl::memory::format_tag::any),
                                              g.strides, g.kernel, g.dilates, g.pad_begin, g.pad_end);
          dnnl::pooling_v2_forward::primitive_desc pd(desc, attr, engine_);
          p.prim = dnnl::pooling_v2_forward(pd);
          p.scratch_bytes = pd.scratchpad_desc().get_size();
          wanted.push_back(pd.src_desc());
          y_md = pd.dst_desc();
        }
      } else if (step.kind == Step::Kind::kEltwise) {
        p.threads = team(8.0 * double(elements));
        use_threads(p.threads);
        dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, step.act.algorithm, x_md,
                                         step.act.alpha, step.act.beta);
        dnnl::eltwise_forward::primitive_desc pd(desc, attr, engine_);
        p.prim = dnnl::eltwise_forward(pd);
        p.scratch_bytes = pd.scratchpad_desc().get_size();
        wanted.push_back(pd.src_desc());
        y_md = pd.dst_desc();
        y_dims = x;
      } else {  // kAdd: both operands in the layout of the one computed inside
        if (!step.inputs[0].internal && step.inputs[1].internal) {
          x_md = source_md(step.inputs[1]);
          p.swapped = true;
        }
        if (source_dims(step.inputs[1]) != x) {
          *err = "Add '" + step.name + "': operands of shapes that differ at run time (a broadcast)";
          return nullptr;
        }
        p.threads = team(4.0 * double(elements));
        use_threads(p.threads);
        dnnl::binary::desc desc(dnnl::algorithm::binary_add, x_md, x_md,
                                dnnl::memory::desc(dims_t(x.begin(), x.end()), dt::f32, dnnl::memory::format_tag::any));
        dnnl::binary::primitive_desc pd(desc, attr, engine_);
        p.prim = dnnl::binary(pd);
        p.scratch_bytes = pd.scratchpad_desc().get_size();
        wanted.push_back(pd.src_desc(0));  // the same layout for both: addition commutes
        wanted.push_back(pd.src_desc(1));
        y_md = pd.dst_desc();
        y_dims = x;
      }
      // Inputs not in the wanted layout: reordered into temporaries live
      // for this step only (group inputs, or a layout change inside).
      for (size_t k = 0; k < step.inputs.size(); ++k) {
        PlannedInput in;
        in.md = wanted[k];
        dnnl::memory::desc have = source_md(step.inputs[k]);
        in.source_md = have;
        if (have != wanted[k]) {
          in.reorder = make_reorder(have, wanted[k], engine_);
          in.temp = layout.place(wanted[k].get_size(), i, i);
        }
        p.inputs.push_back(std::move(in));
      }
      plan->slot_md[step.slot] = y_md;
      plan->slot_dims[step.slot] = y_dims;
      plan->slot_offset[step.slot] = layout.place(y_md.get_size(), i, std::max(slots_[step.slot].last_use, i));
      if (slots_[step.slot].output_index >= 0 && y_md != plain_md(y_dims))
        plan->slot_to_plain[step.slot] = make_reorder(y_md, plain_md(y_dims), engine_);
      scratch = std::max(scratch, p.scratch_bytes);
      plan->steps.push_back(std::move(p));
    }
    stream.wait();
    plan->scratch_offset = layout.peak();
    plan->arena_bytes = layout.peak() + scratch;
    return plan;
  }

  std::vector<Step> steps_;
  std::vector<SlotInfo> slots_;
  dnnl::engine engine_;
  bool use_bf16_ = false;  // the device allows bf16 convolutions (DeviceConfig)
  mutable ShapeCache<Schedule> schedules_;
};

}  // namespace

sdk::KernelResult create_blocked_group(const OnyxGraphView& g, std::span<const uint32_t> nodes,
                                       const DeviceConfig& config) {
  GraphLinks links(g);
  std::vector<bool> member(g.node_count, false);
  for (uint32_t n : nodes) member[n] = true;
  std::vector<Step> steps;
  std::vector<SlotInfo> slots;
  std::vector<int32_t> slot_value;  // per slot: the value it holds now
  std::map<int32_t, size_t> slot_of;  // value -> slot, for values computed inside
  std::map<int32_t, int> output_of;   // value -> group output index
  std::vector<int> producer_step;     // per slot: the step writing it
  size_t group_inputs = 0, group_outputs = 0;
  auto fail = [&](uint32_t n, const std::string& why) -> sdk::KernelResult {
    return sdk::make_status(ONYX_STATUS_UNIMPLEMENTED, "oneDNN group at node '%s': %s", g.nodes[n].name, why.c_str());
  };
  for (uint32_t n : nodes) {
    const OnyxNodeView& view = g.nodes[n];
    NodeInfo node(g, n, sdk::Constants::kBorrow);
    if (std::string why = blocked_member_reason(g, links, n); !why.empty()) return fail(n, why);
    std::vector<Source> sources;
    for (size_t k = 0; k < view.input_count; ++k) {
      auto it = view.inputs[k] >= 0 ? slot_of.find(view.inputs[k]) : slot_of.end();
      sources.push_back(it != slot_of.end() ? Source{true, it->second} : Source{false, group_inputs++});
    }
    for (size_t k = 0; k < view.output_count; ++k) output_of[view.outputs[k]] = int(group_outputs++);
    int32_t x = view.inputs[0], y = view.outputs[0];
    // Folds into the step that wrote the input: its only reader, as the
    // group rules guarantee for values passed inside a group.
    bool from_inside = sources[0].internal && links.sole_reader(g, x);
    Step* writer = from_inside ? &steps[size_t(producer_step[sources[0].index])] : nullptr;
    const std::string op = node.op_type;
    Activation act;
    std::string why;
    if (op == "BatchNormalization") {
      if (!writer || writer->kind != Step::Kind::kConv || !writer->post.empty())
        return fail(n, "BatchNormalization does not follow its Conv inside the group");
      fold_batch_norm(node, &writer->weights, &writer->bias);
      slot_of[y] = sources[0].index;
      slot_value[sources[0].index] = y;
      continue;
    }
    if (op != "Conv" && op != "Add" && activation_of(node, &act, &why) && writer &&
        (writer->kind == Step::Kind::kConv || writer->kind == Step::Kind::kAdd)) {
      writer->post.push_back(act);
      slot_of[y] = sources[0].index;
      slot_value[sources[0].index] = y;
      continue;
    }
    Step step;
    step.name = node.name;
    step.inputs = {sources[0]};
    if (op == "Conv") {
      step.kind = Step::Kind::kConv;
      step.conv = read_conv_attrs(node);
      step.weights = constant_floats(node, 1);
      step.weight_dims = node.inputs[1].constant->dims;
      if (is_constant(node, 2)) step.bias = constant_floats(node, 2);
    } else if (op.find("Pool") != std::string::npos) {
      step.kind = Step::Kind::kPool;
      step.pool = read_pool_spec(node);
    } else if (op == "Add") {
      step.kind = Step::Kind::kAdd;
      step.inputs.push_back(sources[1]);
    } else {
      step.kind = Step::Kind::kEltwise;
      step.act = act;
    }
    step.slot = slots.size();
    slots.emplace_back();
    slot_value.push_back(y);
    producer_step.push_back(int(steps.size()));
    slot_of[y] = step.slot;
    for (const Source& s : step.inputs)
      if (s.internal) slots[s.index].last_use = steps.size();
    steps.push_back(std::move(step));
  }
  // A slot is a group output when its final value is read outside or is a graph output.
  for (size_t s = 0; s < slots.size(); ++s) {
    int32_t v = slot_value[s];
    bool outside = (g.values[size_t(v)].flags & ONYX_VALUE_GRAPH_OUTPUT) != 0;
    for (uint32_t r : links.readers[size_t(v)]) outside = outside || !member[r];
    if (outside) slots[s].output_index = output_of[v];
    if (outside) slots[s].last_use = std::max(slots[s].last_use, size_t(producer_step[s]));
  }
  return std::unique_ptr<sdk::Kernel>(new BlockedGroupKernel(std::move(steps), std::move(slots), config));
}

}  // namespace onyx::onednn
