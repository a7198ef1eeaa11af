// train_bench.cpp: training-step throughput of the test MLP and CNN on the
// CPU provider (or --provider NAME, with CPU fallback for what it declines),
// with the step split into forward, backward and optimizer, the memory the
// training graph plans and holds, printed beside the same model's
// inference-only throughput measured in the same run.
//
//   onyx_train_bench [--provider NAME] [--threads N] [--steps N] [--batch B] [--profile K]
//
// forward   = the eval model (forward + loss) on the batch;
// backward  = train step (forward + loss + gradients) - forward;
// optimizer = one AdamW optimizer step over every trainable parameter.
// --profile K: the K slowest kernels of the train and optimizer sessions,
// in microseconds per step (their profilers on for the timed steps), and
// the time in copy steps (between host and device). A GPU provider's kernel
// times are host-side (launches); the run's wall time is beside them.
// Memory: the training graph's planned arena and its lower bound (memory
// planner), parameters + gradients + AdamW state, and the process peak RSS.
// ReduceSum: the CNN's conv bias gradients (sum of dY [B, C, H, W] over N, H
// and W) as a one-node session, against the single-accumulator loop the
// kernel ran before it folded runs into independent lanes, same data, same
// run, one thread each.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ir/onnx_import.h"
#include "test_models.h"
#include "training/artifacts.h"
#include "training/training_session.h"

namespace {

namespace tm = onyx::test_models;
namespace tr = onyx::runtime::training;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string provider = "cpu";
  size_t threads = 2;
  int steps = 60;
  int64_t batch = 64;
  int profile = 0;  // kernels listed per session; 0: no profiling
};

double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "onyx_train_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T check(onyx::runtime::StatusOr<T> v, const char* what) {
  if (!v.ok()) fail(std::string(what) + ": " + v.status().to_string());
  return std::move(v).value();
}

void check(const onyx::runtime::Status& s, const char* what) {
  if (!s.ok()) fail(std::string(what) + ": " + s.to_string());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "12 kernels on cuda, 2 on cpu, 9 copies": where a session's steps run.
std::string placement(const onyx::runtime::Session& session) {
  std::map<std::string, int> kernels;
  int copies = 0;
  for (const auto& step : session.steps()) {
    if (step.kind == onyx::runtime::Step::kCopy) ++copies;
    else if (step.kind == onyx::runtime::Step::kKernel) ++kernels[session.devices()[size_t(step.device)]->label];
  }
  std::string text;
  for (const auto& [label, n] : kernels) text += std::to_string(n) + " kernels on " + label + ", ";
  return text + std::to_string(copies) + " copies";
}

// The o.profile kernels of `session` that took longest, per step.
void print_profile(const char* model, const char* what, onyx::runtime::Session& session, const Options& o) {
  std::map<std::string, std::pair<int64_t, int64_t>> by_name;  // name -> (total ns, count)
  int64_t total = 0, copies = 0, copy_count = 0, runs = 0;
  for (const auto& e : session.profiler()->events()) {
    if (e.category == "run") runs += e.duration_ns;
    if (e.category == "copy") copies += e.duration_ns, ++copy_count;
    if (e.category != "kernel") continue;
    by_name[e.name].first += e.duration_ns;
    ++by_name[e.name].second;
    total += e.duration_ns;
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [name, t] : by_name) order.emplace_back(t.first, name);
  std::sort(order.rbegin(), order.rend());
  std::printf("  %s session: runs %.1f us, kernels %.1f us, %.1f copies %.1f us per step\n", what,
              double(runs) / 1e3 / o.steps, double(total) / 1e3 / o.steps, double(copy_count) / o.steps,
              double(copies) / 1e3 / o.steps);
  for (size_t i = 0; i < order.size() && i < size_t(o.profile); ++i)
    std::printf("    %8.1f us  %s\n", double(order[i].first) / 1e3 / o.steps, order[i].second.c_str());
  auto trace = session.end_profiling();
  check(trace.status(), "end profiling");
  if (const char* dir = std::getenv("ONYX_TRAIN_BENCH_TRACE_DIR")) {
    std::string path = std::string(dir) + "/" + model + "-" + what + ".json";
    if (FILE* f = std::fopen(path.c_str(), "w")) { std::fputs(trace.value().c_str(), f); std::fclose(f); }
  }
}

void bench_model(const char* name, const ONNX_NAMESPACE::ModelProto& forward, std::vector<std::string> frozen,
                 onyx::runtime::Shape input_shape, const Options& o) {
  onyx::runtime::ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  onyx::runtime::SessionOptions session_options;
  session_options.intra_op_threads = o.threads;
  session_options.fallback = onyx::runtime::FallbackPolicy::kFail;
  session_options.providers = {{o.provider, {}}};
  if (o.provider != "cpu") {
    session_options.providers.push_back({"cpu", {}});
    session_options.fallback = onyx::runtime::FallbackPolicy::kAllow;
  }
  std::vector<float> x_data = tm::random_input(size_t(onyx::runtime::element_count(input_shape)), 5);
  std::vector<int64_t> labels(size_t(o.batch));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int64_t(i % 10);
  onyx::runtime::Tensor x = onyx::runtime::Tensor::wrap(ONYX_DTYPE_FLOAT32, input_shape, x_data.data(), nullptr);
  onyx::runtime::Tensor y = onyx::runtime::Tensor::wrap(ONYX_DTYPE_INT64, {o.batch}, labels.data(), nullptr);

  // Inference only: the forward model as an ordinary session.
  std::string bytes = forward.SerializeAsString();
  auto inference = check(onyx::runtime::Session::create(registry, check(onyx::runtime::ir::load_model_from_bytes(bytes.data(), bytes.size(), ""), "import"),
                                               session_options), "inference session");
  std::vector<double> infer;
  for (int i = 0; i < o.steps + 5; ++i) {
    double t = now_s();
    check(inference->run({{"x", x}}), "inference run");
    if (i >= 5) infer.push_back(now_s() - t);
  }

  tr::ArtifactSpec spec;
  spec.training.frozen = std::move(frozen);
  spec.optimizer = "adamw";
  spec.optimizer_search_dirs = {ONYX_OPTIMIZER_DIR};
  tr::Artifacts artifacts = check(tr::make_artifacts(forward, "", spec), "artifacts");
  auto state = std::make_shared<onyx::checkpoint::Checkpoint>(artifacts.checkpoint);
  tr::TrainingSessionOptions options;
  options.session = session_options;
  auto session = check(tr::TrainingSession::create(registry, state,
                                                   {artifacts.training.SerializeAsString(), artifacts.eval.SerializeAsString(),
                                                    artifacts.optimizer.SerializeAsString(), ""},
                                                   options),
                       "training session");
  std::vector<double> fwd, train, opt, step;
  for (int i = 0; i < o.steps + 5; ++i) {
    double t0 = now_s();
    check(session->eval_step({x, y}), "eval step");
    double t1 = now_s();
    session->lazy_reset_grad();
    check(session->train_step({x, y}), "train step");
    double t2 = now_s();
    check(session->optimizer_step(), "optimizer step");
    double t3 = now_s();
    if (i == 4 && o.profile) {
      session->training_graph_session().start_profiling();
      session->optimizer_graph_session()->start_profiling();
    }
    if (i < 5) continue;
    fwd.push_back(t1 - t0);
    train.push_back(t2 - t1);
    opt.push_back(t3 - t2);
    step.push_back(t3 - t1);
  }
  double f = median(fwd), tr_ = median(train), op = median(opt), st = median(step), inf = median(infer);
  double b = double(o.batch);
  std::printf("%-4s batch %lld, provider %s, %zu threads, median of %d\n", name, (long long)o.batch, o.provider.c_str(),
              o.threads, o.steps);
  std::printf("  steps: training %s; optimizer %s\n", placement(session->training_graph_session()).c_str(),
              placement(*session->optimizer_graph_session()).c_str());
  std::printf("  inference only      %9.0f samples/s  (%.3f ms/batch)\n", b / inf, inf * 1e3);
  std::printf("  training step       %9.0f samples/s  (%.3f ms/step)  = %.2fx inference time\n", b / st, st * 1e3, st / inf);
  std::printf("    forward + loss    %9.3f ms  (%4.1f%%)\n", f * 1e3, 100 * f / st);
  std::printf("    backward          %9.3f ms  (%4.1f%%)\n", (tr_ - f) * 1e3, 100 * (tr_ - f) / st);
  std::printf("    optimizer (AdamW) %9.3f ms  (%4.1f%%)  %s\n", op * 1e3, 100 * op / st,
              session->optimizer_fused() ? "fused kernel" : "inlined function body");

  if (o.profile) {
    print_profile(name, "train", session->training_graph_session(), o);
    print_profile(name, "optimizer", *session->optimizer_graph_session(), o);
  }

  std::map<std::string, onyx::runtime::Shape> shapes = {{"x", input_shape}, {"labels", {o.batch}}};
  auto train_memory = check(session->training_graph_session().memory_report(shapes), "training memory report");
  auto infer_memory = check(inference->memory_report({{"x", input_shape}}), "inference memory report");
  size_t params = session->parameters_bytes(false), trainable = session->parameters_bytes(true);
  for (const auto& m : train_memory)
    std::printf("  training graph arena  %8.2f MiB planned, lower bound %.2f MiB (%.3fx), %zu tensors planned, %zu in place\n",
                double(m.arena_bytes) / 1048576, double(m.lower_bound) / 1048576,
                m.lower_bound ? double(m.arena_bytes) / double(m.lower_bound) : 0.0, m.planned_tensors, m.in_place);
  for (const auto& m : infer_memory)
    std::printf("  inference arena       %8.2f MiB planned, lower bound %.2f MiB\n", double(m.arena_bytes) / 1048576,
                double(m.lower_bound) / 1048576);
  std::printf("  parameters %.2f MiB + gradients %.2f MiB + AdamW state %.2f MiB\n", double(params) / 1048576,
              double(trainable) / 1048576, 2.0 * double(trainable) / 1048576);
}

// The pre-lanes ReduceSum loop: one double accumulator per output, every
// add waiting on the previous one.
void reduce_sum_single_accumulator(const std::vector<float>& x, int64_t n, int64_t c, int64_t plane, float* y) {
  for (int64_t ch = 0; ch < c; ++ch) {
    double acc = 0;
    for (int64_t b = 0; b < n; ++b) {
      const float* p = x.data() + (b * c + ch) * plane;
      for (int64_t i = 0; i < plane; ++i) acc += double(p[i]);
    }
    y[ch] = float(acc);
  }
}

void bench_reduce_sum(const Options& o, int64_t channels, int64_t side) {
  const onyx::runtime::Shape shape = {o.batch, channels, side, side};
  ONNX_NAMESPACE::ModelProto model;
  model.set_ir_version(8);
  ONNX_NAMESPACE::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  ONNX_NAMESPACE::GraphProto* g = model.mutable_graph();
  g->set_name("reduce_sum");
  ONNX_NAMESPACE::NodeProto* node = g->add_node();
  node->set_op_type("ReduceSum");
  node->add_input("x");
  node->add_input("axes");
  node->add_output("y");
  ONNX_NAMESPACE::AttributeProto* keepdims = node->add_attribute();
  keepdims->set_name("keepdims");
  keepdims->set_type(ONNX_NAMESPACE::AttributeProto::INT);
  keepdims->set_i(0);
  ONNX_NAMESPACE::TensorProto* axes = g->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(ONNX_NAMESPACE::TensorProto::INT64);
  axes->add_dims(3);
  for (int64_t a : {0, 2, 3}) axes->add_int64_data(a);
  auto declare = [](ONNX_NAMESPACE::ValueInfoProto* v, const char* name, const onyx::runtime::Shape& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(ONNX_NAMESPACE::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  declare(g->add_input(), "x", shape);
  declare(g->add_output(), "y", {channels});

  onyx::runtime::ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  onyx::runtime::SessionOptions session_options;
  session_options.intra_op_threads = 1;
  session_options.fallback = onyx::runtime::FallbackPolicy::kFail;
  std::string bytes = model.SerializeAsString();
  auto session = check(onyx::runtime::Session::create(registry, check(onyx::runtime::ir::load_model_from_bytes(bytes.data(), bytes.size(), ""), "import"),
                                             session_options), "reduce session");
  std::vector<float> x_data = tm::random_input(size_t(onyx::runtime::element_count(shape)), 7);
  onyx::runtime::Tensor x = onyx::runtime::Tensor::wrap(ONYX_DTYPE_FLOAT32, shape, x_data.data(), nullptr);
  std::vector<float> base(static_cast<size_t>(channels));
  std::vector<double> kernel_s, base_s;
  float max_diff = 0;
  for (int i = 0; i < o.steps + 5; ++i) {
    double t0 = now_s();
    std::vector<onyx::runtime::Tensor> out = check(session->run({{"x", x}}), "reduce run");
    double t1 = now_s();
    reduce_sum_single_accumulator(x_data, o.batch, channels, side * side, base.data());
    double t2 = now_s();
    for (int64_t ch = 0; ch < channels; ++ch)
      max_diff = std::max(max_diff, std::abs(out[0].data_as<float>()[ch] - base[size_t(ch)]));
    if (i < 5) continue;
    kernel_s.push_back(t1 - t0);
    base_s.push_back(t2 - t1);
  }
  double k = median(kernel_s), b = median(base_s);
  std::printf("ReduceSum [%lld,%lld,%lld,%lld] over N,H,W, 1 thread: %.3f ms (session run) vs %.3f ms single-accumulator "
              "loop = %.2fx; max |difference| %.2g\n",
              (long long)o.batch, (long long)channels, (long long)side, (long long)side, k * 1e3, b * 1e3, b / k, double(max_diff));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) fail("option " + a + " needs a value");
    if (a == "--provider") {
      o.provider = argv[++i];
      continue;
    }
    long v = std::strtol(argv[++i], nullptr, 10);
    if (v <= 0) fail(a + " expects a positive integer");
    if (a == "--threads") o.threads = size_t(v);
    else if (a == "--steps") o.steps = int(v);
    else if (a == "--batch") o.batch = v;
    else if (a == "--profile") o.profile = int(v);
    else fail("unknown option " + a + " (--provider NAME --threads N --steps N --batch B --profile K)");
  }
  bench_model("mlp", tm::build_mlp(tm::make_mlp_weights()), {}, {o.batch, 784}, o);
  bench_model("cnn", tm::build_cnn(tm::make_cnn_weights()), {"bn1.mean", "bn1.var", "bn2.mean", "bn2.var"},
              {o.batch, 1, 28, 28}, o);
  if (o.provider == "cpu") {   // the CPU kernel's own measurement
    bench_reduce_sum(o, 8, 28);   // conv1's bias gradient
    bench_reduce_sum(o, 16, 14);  // conv2's
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("process peak RSS %.1f MiB\n", double(usage.ru_maxrss) / 1024);
  return 0;
}
