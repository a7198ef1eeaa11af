#include "dnnl_common.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <cstdlib>
#include <cstring>
#include <new>

namespace onyx::onednn {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

bool cpu_has_native_bf16() {
  // cpu_isa values are bit sets ordered by features: bf16 dot products come
  // with avx512_core_bf16 and with AMX.
  auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

dnnl::memory::desc plain_md(const std::vector<int64_t>& dims, dnnl::memory::data_type type) {
  dims_t d = dims.empty() ? dims_t{1} : dims_t(dims.begin(), dims.end());
  dims_t strides(d.size(), 1);
  for (size_t k = d.size() - 1; k > 0; --k) strides[k - 1] = strides[k] * std::max<int64_t>(d[k], 1);
  return dnnl::memory::desc(d, type, strides);
}

dnnl::memory::desc strided_md(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  return dnnl::memory::desc(dims_t(dims.begin(), dims.end()), dnnl::memory::data_type::f32,
                            dims_t(strides.begin(), strides.end()));
}

dnnl::primitive_attr base_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

namespace {

bool is_amx(const dnnl::primitive_desc& pd) { return std::strstr(pd.impl_info_str(), "amx") != nullptr; }

// Milliseconds of `pd`'s primitive's fastest of three runs on scratch
// buffers, after one to warm up; just the warm-up's when that took over
// `give_up_ms`.
double time_runs(const dnnl::primitive_desc& pd, const dnnl::engine& engine, double give_up_ms) {
  dnnl::primitive prim(pd.get());
  BoundArgs args;
  for (const auto& [arg, md] : {std::pair{DNNL_ARG_SRC, pd.src_desc()}, {DNNL_ARG_WEIGHTS, pd.weights_desc()},
                                {DNNL_ARG_BIAS, pd.weights_desc(1)}, {DNNL_ARG_DST, pd.dst_desc()},
                                {DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc()}})
    if (md.get_size() != 0) args.add_owned(arg, md, engine);
  dnnl::stream& stream = thread_stream();
  double best = std::numeric_limits<double>::infinity();
  for (int run = 0; run < 4; ++run) {
    const auto start = std::chrono::steady_clock::now();
    args.execute(prim, stream);
    stream.wait();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (run == 0 && ms > give_up_ms) return ms;
    if (run > 0) best = std::min(best, ms);
  }
  return best;
}

}  // namespace

void pick_faster_int8_impl(dnnl::primitive_desc& pd, const dnnl::engine& engine) {
  if (!is_amx(pd)) return;
  const dnnl::primitive_desc first = pd;
  bool found = false;
  while (!found && pd.next_impl())
    found = !is_amx(pd) && std::strncmp(pd.impl_info_str(), "ref", 3) != 0;
  if (!found) {
    pd = first;
    return;
  }
  const dnnl::primitive_desc other = pd;
  constexpr double kUntimedMs = 2.0;
  const double first_ms = time_runs(first, engine, kUntimedMs);
  pd = first_ms > kUntimedMs || first_ms <= time_runs(other, engine, 4 * first_ms) ? first : other;
}

size_t BoundArgs::add(int arg, const dnnl::memory::desc& md, const dnnl::engine& engine, void* data) {
  memories_.emplace_back(md, engine, data);
  args_.push_back({arg, memories_.back().get()});
  return memories_.size() - 1;
}

size_t BoundArgs::add(int arg, const dnnl::memory& memory) {
  memories_.push_back(memory);
  args_.push_back({arg, memories_.back().get()});
  return memories_.size() - 1;
}

void BoundArgs::add_owned(int arg, const dnnl::memory::desc& md, const dnnl::engine& engine) {
  size_t bytes = md.get_size();
  if (bytes == 0) return;
  void* buffer = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!buffer) throw std::bad_alloc();
  std::memset(buffer, 0, bytes);
  owned_.emplace_back(buffer, std::free);
  add(arg, md, engine, buffer);
}

void BoundArgs::execute(const dnnl::primitive& prim, const dnnl::stream& stream) const {
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(prim.get(), stream.get(), int(args_.size()), args_.data()),
      "could not execute a primitive");
}

size_t bind_input(BoundArgs& prim, BoundArgs& conversion, int arg, const dnnl::memory::desc& user,
                  const dnnl::memory::desc& wanted, bool convert, const dnnl::engine& engine) {
  if (!convert) return prim.add(arg, user, engine);
  const size_t index = conversion.add(DNNL_ARG_FROM, user, engine);
  conversion.add_owned(DNNL_ARG_TO, wanted, engine);
  prim.add(arg, conversion.memory(index + 1));
  return index;
}

size_t bind_output(BoundArgs& prim, BoundArgs& conversion, int arg, const dnnl::memory::desc& user,
                   const dnnl::memory::desc& produced, bool convert, const dnnl::engine& engine) {
  if (!convert) return prim.add(arg, user, engine);
  prim.add_owned(arg, produced, engine);
  conversion.add(DNNL_ARG_FROM, prim.memory(prim.size() - 1));
  return conversion.add(DNNL_ARG_TO, user, engine);
}

void ConvertedArgs::execute(const dnnl::primitive& prim, const std::optional<dnnl::reorder>& to_main,
                            const std::optional<dnnl::reorder>& from_main, const void* x_data, void* y_data,
                            const dnnl::stream& stream) {
  if (to_main) {
    in.point(x, x_data);
    in.execute(*to_main, stream);
  } else {
    main.point(x, x_data);
  }
  (from_main ? out : main).point(y, y_data);
  main.execute(prim, stream);
  if (from_main) out.execute(*from_main, stream);
}

void execute_bound(BoundPool<BoundArgs>& calls, const dnnl::primitive& prim, const dnnl::primitive_desc_base& pd,
                   std::span<const ArgBuffer> args) {
  std::unique_ptr<BoundArgs> bound = calls.take([&] {
    auto made = std::make_unique<BoundArgs>();
    const dnnl::engine engine = pd.get_engine();
    for (const ArgBuffer& a : args) made->add(a.arg, pd.query_md(dnnl::query::exec_arg_md, a.arg), engine);
    made->add_owned(DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc(), engine);
    return made;
  });
  for (size_t k = 0; k < args.size(); ++k) bound->point(k, args[k].data);
  dnnl::stream& stream = thread_stream();
  bound->execute(prim, stream);
  stream.wait();
  calls.give_back(std::move(bound));
}

void execute_bound(BoundPool<BoundArgs>& calls, const dnnl::primitive& prim, const dnnl::primitive_desc_base& pd,
                   std::initializer_list<ArgBuffer> args) {
  execute_bound(calls, prim, pd, std::span<const ArgBuffer>(args.begin(), args.size()));
}

int threads_for(ComputeContext& ctx, double work) {
  int host = int(std::max<size_t>(ctx.thread_count(), 1));
  return std::clamp(int(work / kWorkPerThread), 1, host);
}

void use_threads(int threads) {
  // omp_set_num_threads sets the calling thread's own setting only, so runs
  // on other threads are not affected.
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

void use_threads_for(ComputeContext& ctx, double work) { use_threads(threads_for(ctx, work)); }

std::vector<int64_t> shape_key(ComputeContext& ctx) {
  std::vector<int64_t> key;
  for (size_t k = 0; k < ctx.input_count(); ++k) {
    auto t = ctx.input(k);
    if (!t) {
      key.push_back(-1);  // omitted
      continue;
    }
    key.push_back(int64_t(t->rank()));
    key.insert(key.end(), t->dims.begin(), t->dims.end());
  }
  return key;
}

std::string require_f32(const NodeInfo& node, std::initializer_list<size_t> inputs) {
  for (size_t k : inputs) {
    if (!node.input_present(k)) continue;
    if (node.inputs[k].dtype != ONYX_DTYPE_FLOAT32)
      return "input " + std::to_string(k) + " is " + sdk::dtype_name(node.inputs[k].dtype) +
             "; oneDNN kernels here run float32 only";
  }
  return {};
}

std::string require_rank(const NodeInfo& node, size_t input, int min_rank, int max_rank) {
  if (!node.input_present(input)) return "input " + std::to_string(input) + " is missing";
  int rank = node.inputs[input].rank;
  if (rank < 0) return "rank of input " + std::to_string(input) + " unknown at session creation";
  if (rank < min_rank || rank > max_rank)
    return "input " + std::to_string(input) + " has rank " + std::to_string(rank) +
           "; supported ranks are " + std::to_string(min_rank) + ".." + std::to_string(max_rank);
  return {};
}

}  // namespace onyx::onednn
