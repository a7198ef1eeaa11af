// data_parallel_check: the test MLP (tests/training/mlp_fixture.h) trained
// data-parallel with AdamW and gradient clipping, one process per rank:
//
//   onyx_data_parallel_check loopback OUT [--bucket-bytes B] [--zero 1] [--grad-accum K]
//   mpirun -np 4 onyx_data_parallel_check mpi OUT [...]
//   onyx_data_parallel_check --compare REFERENCE OTHER
//   mpirun -np 2 onyx_data_parallel_check mpi OUT --different-models 1
//     (rank r starts from other weights: start-up must refuse the job)
//   mpirun -np 2 onyx_data_parallel_check mpi OUT --different-settings 1
//     (rank r has another bucket size: start-up must refuse the job)
//   ... --poison-step S --poison-rank R
//     (rank R's first sample of step S is NaN: every rank must skip step S)
//
// Every step takes a global batch of 8 samples; rank r of N trains on
// samples [r*8/N, (r+1)*8/N) of it (split by global index, so the result
// does not depend on N), in K micro-batches whose gradients the session
// averages (average_accumulated_gradients). After every step the ranks
// compare their weights' hashes (they must be identical), and rank 0 writes
// the global loss of each step, the final weights and the optimizer state
// to OUT, as text. --compare checks that OTHER equals REFERENCE within
// 1e-6 + 1e-5 * |reference| element by element (summation order is the only
// difference between world sizes).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mlp_fixture.h"
#include "onyx/checkpoint_tools.h"
#include "training/artifacts.h"
#include "training/training_session.h"

using namespace onyx::runtime;
using namespace onyx::runtime::training;
using namespace onyx::mlp_fixture;

namespace {

constexpr int kSteps = 50;
constexpr int64_t kGlobalBatch = 8;

int fail(const std::string& message) {
  std::fprintf(stderr, "onyx_data_parallel_check: %s\n", message.c_str());
  return 1;
}

std::vector<double> read_numbers(const std::string& path) {
  std::ifstream in(path);
  std::vector<double> v;
  std::string word;
  while (in >> word)
    if (word.find_first_of("0123456789") != std::string::npos && word.find(':') == std::string::npos)
      v.push_back(std::strtod(word.c_str(), nullptr));
  return v;
}

int compare(const std::string& reference, const std::string& other) {
  std::vector<double> a = read_numbers(reference), b = read_numbers(other);
  if (a.empty() || a.size() != b.size())
    return fail("the files hold " + std::to_string(a.size()) + " and " + std::to_string(b.size()) + " numbers");
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double tol = 1e-6 + 1e-5 * std::fabs(a[i]);
    if (!(std::fabs(a[i] - b[i]) <= tol)) {
      std::fprintf(stderr, "number %zu: %.9g vs %.9g (tolerance %.3g)\n", i, a[i], b[i], tol);
      return fail(other + " differs from " + reference);
    }
    worst = std::max(worst, std::fabs(a[i] - b[i]));
  }
  std::printf("%s matches %s: %zu numbers, largest difference %.3g\n", other.c_str(), reference.c_str(), a.size(),
              worst);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && !std::strcmp(argv[1], "--compare")) return compare(argv[2], argv[3]);
  if (argc < 3) return fail("usage: onyx_data_parallel_check PLUGIN OUT [--bucket-bytes B]");
  DataParallelOptions dp;
  bool different_models = false, different_settings = false;
  int poison_step = -1, poison_rank = 0;
  int accum = 1;
  for (int k = 3; k + 1 < argc; k += 2) {
    if (!std::strcmp(argv[k], "--bucket-bytes")) dp.bucket_bytes = std::strtoull(argv[k + 1], nullptr, 10);
    if (!std::strcmp(argv[k], "--different-models")) different_models = std::atoi(argv[k + 1]) != 0;
    if (!std::strcmp(argv[k], "--zero")) dp.zero_stage = std::atoi(argv[k + 1]);
    if (!std::strcmp(argv[k], "--different-settings") && std::atoi(argv[k + 1]) != 0) different_settings = true;
    if (!std::strcmp(argv[k], "--poison-step")) poison_step = std::atoi(argv[k + 1]);
    if (!std::strcmp(argv[k], "--poison-rank")) poison_rank = std::atoi(argv[k + 1]);
    if (!std::strcmp(argv[k], "--grad-accum")) accum = std::max(1, std::atoi(argv[k + 1]));
  }

  auto loaded = Communicator::load(argv[1]);
  if (!loaded.ok()) return fail(loaded.status().to_string());
  std::shared_ptr<Communicator> comm = std::move(loaded).value();
  const int rank = comm->rank(), size = comm->size();
  if (kGlobalBatch % (int64_t(size) * accum) != 0) return fail("the global batch of 8 does not split evenly");
  const int64_t local = kGlobalBatch / size, micro = local / accum;

  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  ArtifactSpec spec;
  spec.optimizer = "adamw";
  spec.optimizer_search_dirs = {ONYX_OPTIMIZER_DIR};
  auto artifacts = make_artifacts(forward_model(initial_params(different_models ? 7 + rank : 7)), "", spec);
  if (!artifacts.ok()) return fail(artifacts.status().to_string());
  auto state = std::make_shared<onyx::checkpoint::Checkpoint>(artifacts->checkpoint);
  TrainingSessionOptions options;
  options.session.fallback = FallbackPolicy::kFail;
  options.session.intra_op_threads = 1;
  options.learning_rate = 1e-2;
  options.max_grad_norm = 0.5f;  // small enough to clip on the first steps
  options.average_accumulated_gradients = true;
  TrainingModelBytes bytes{artifacts->training.SerializeAsString(), artifacts->eval.SerializeAsString(),
                           artifacts->optimizer.SerializeAsString(), ""};
  auto created = TrainingSession::create(registry, state, bytes, options);
  if (!created.ok()) return fail(created.status().to_string());
  TrainingSession& session = *created.value();
  dp.optimizer_search_dirs = {ONYX_OPTIMIZER_DIR};
  if (different_settings) dp.bucket_bytes = 1024 * size_t(rank + 1);
  if (Status st = session.join_data_parallel(comm, dp); !st.ok()) return fail(st.to_string());

  std::vector<Batch> batches = make_batches(kSteps, kGlobalBatch, 11);
  std::ostringstream out;
  out.precision(9);
  int clipped = 0, skipped = 0;
  for (int step = 0; step < kSteps; ++step) {
    const Batch& global = batches[step];
    session.lazy_reset_grad();
    double loss = 0;
    for (int m = 0; m < accum; ++m) {
      const int64_t first = int64_t(rank) * local + m * micro;  // global sample index
      std::vector<float> x(global.x.begin() + first * kIn, global.x.begin() + (first + micro) * kIn);
      std::vector<int64_t> labels(global.labels.begin() + first, global.labels.begin() + first + micro);
      if (step == poison_step && rank == poison_rank && m == 0) x[0] = std::nanf("");
      auto outputs = session.train_step({Tensor::wrap(ONYX_DTYPE_FLOAT32, {micro, kIn}, x.data(), nullptr),
                                         Tensor::wrap(ONYX_DTYPE_INT64, {micro}, labels.data(), nullptr)});
      if (!outputs.ok()) return fail(outputs.status().to_string());
      loss += *outputs->at(0).data_as<float>() / accum;
    }
    // Each micro-batch's loss is the mean over its samples: their mean over
    // micro-batches and ranks is the global batch's mean loss.
    if (Status st = comm->all_reduce(&loss, &loss, 1, ONYX_DTYPE_FLOAT64, ONYX_REDUCE_SUM, "loss"); !st.ok())
      return fail(st.to_string());
    loss /= size;
    if (Status st = session.optimizer_step(); !st.ok()) return fail(st.to_string());
    if (session.last_step_skipped()) ++skipped;
    else if (session.last_grad_norm() > options.max_grad_norm) ++clipped;
    out << "step " << step << " loss: " << loss << "\n";
    // Every rank must hold the same weights after every step.
    auto hash = session.parameters_hash();
    if (!hash.ok()) return fail(hash.status().to_string());
    const uint64_t h = hash.value();
    uint64_t range[2] = {h, ~h};  // the max of ~h is ~(the min of h)
    if (Status st = comm->all_reduce(range, range, 2, ONYX_DTYPE_UINT64, ONYX_REDUCE_MAX, "hash"); !st.ok())
      return fail(st.to_string());
    if (range[0] != ~range[1]) return fail("the ranks' weights differ after step " + std::to_string(step));
  }
  // This rank's checkpoint shard, made from its own state (under ZeRO: its
  // optimizer shard, nothing gathered), must be exactly what
  // checkpoint::shard() cuts from the complete state for this world size.
  auto own_shard = session.checkpoint_shard();
  if (!own_shard.ok()) return fail(own_shard.status().to_string());
  // Under ZeRO the state is in shards: gather it (every rank) before writing.
  if (Status st = session.gather_optimizer_state(); !st.ok()) return fail(st.to_string());
  auto shards = onyx::checkpoint::shard(*state, uint32_t(size));
  if (!shards.ok()) return fail(shards.status().to_string());
  std::vector<std::string> differences = onyx::checkpoint::diff(own_shard.value(), shards.value()[size_t(rank)]);
  for (const std::string& d : differences) std::fprintf(stderr, "rank %d shard: %s\n", rank, d.c_str());
  if (!differences.empty()) return fail("the rank's checkpoint shard differs from checkpoint::shard()'s");
  for (const auto& p : state->module.trainable) {
    out << p.name << ":";
    for (int64_t i = 0; i < p.data.size(); ++i) out << " " << p.data.data_as<float>()[i];
    out << "\n";
  }
  for (const auto& group : state->optimizer)
    for (const auto& ps : group.parameters)
      for (const auto& slot : ps.tensors) {
        out << ps.parameter << "." << slot.name << ":";
        for (int64_t i = 0; i < slot.data.size(); ++i) out << " " << slot.data.data_as<float>()[i];
        out << "\n";
      }
  if (rank == 0) {
    std::ofstream file(argv[2]);
    file << out.str();
    if (!file) return fail(std::string("cannot write ") + argv[2]);
  }
  std::printf("rank %d of %d: %d steps, clipped %d times, skipped %d, optimizer state %zu bytes, %s\n", rank, size,
              kSteps, clipped, skipped, session.optimizer_state_bytes(), comm->counters().to_string().c_str());
  if (clipped == 0) return fail("clipping never happened: the test would not cover it");
  return 0;
}
