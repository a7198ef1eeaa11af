// cmd_train.cpp: `onyx train` (artifacts, then a training loop over an IDX
// image dataset with a progress bar, loss curve CSV + SVG, checkpoint and an
// exported inference model) and `onyx eval` (accuracy of a model on a split).
#include <onyx/onyx_training.hpp>

#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "artifact_options.h"
#include "commands.h"
#include "dataset.h"
#include "loss_plot.h"
#include "scores.h"
#include "session_setup.h"
#include "tensor_io.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using onyx::CheckpointState;

constexpr const char* kDefaultData = "/usr/share/datasets/fashion-mnist";

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string clock_text(double seconds) {
  int s = int(std::max(0.0, seconds) + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d", s / 60, s % 60);
  return buf;
}

// One progress line: step, epoch, bar, loss, throughput, ETA.
void print_progress(int64_t step, int64_t total, int64_t epoch, int64_t epochs, double loss, double samples_per_s,
                    double elapsed, bool tty) {
  const int width = 24;
  int filled = int(double(width) * double(step) / double(total));
  std::string bar = std::string(size_t(filled), '=') + (filled < width ? ">" : "") +
                    std::string(size_t(std::max(0, width - filled - 1)), ' ');
  double eta = step > 0 ? elapsed * double(total - step) / double(step) : 0;
  char line[256];
  std::snprintf(line, sizeof line, "step %lld/%lld epoch %lld/%lld [%s] loss %.4f %.0f samples/s ETA %s",
                (long long)step, (long long)total, (long long)epoch, (long long)epochs, bar.c_str(), loss,
                samples_per_s, clock_text(eta).c_str());
  std::cerr << (tty ? "\r" : "") << line << (tty ? "" : "\n") << std::flush;
}

// The checkpoint property holding the steps a run had taken (its data cursor).
constexpr const char* kStepProperty = "onyx_train_steps";

// A folder of --checkpoint-every's shards (rank-R-of-W.ckpt) must hold one
// per rank of one world size: a save cut short (a rank killed mid-write
// leaves only its rank-R-of-W.ckpt.tmp-*) is refused, naming what is missing.
void check_shard_set(const fs::path& dir, const std::vector<std::string>& files) {
  std::map<int64_t, std::set<int64_t>> ranks;  // world size -> ranks present
  for (const std::string& f : files) {
    long long r = -1, w = -1;
    char end = 0;
    const std::string name = fs::path(f).filename().string();
    if (std::sscanf(name.c_str(), "rank-%lld-of-%lld.ckp%c", &r, &w, &end) == 3 && end == 't' && w > 0 && r >= 0 &&
        r < w && name == "rank-" + std::to_string(r) + "-of-" + std::to_string(w) + ".ckpt")
      ranks[w].insert(r);
  }
  if (ranks.empty()) return;  // not --checkpoint-every's names: aggregation checks the shards themselves
  if (ranks.size() > 1)
    throw CliError("checkpoint folder '" + dir.string() + "' mixes shards of world sizes " +
                   std::to_string(ranks.begin()->first) + " and " + std::to_string(ranks.rbegin()->first));
  const auto& [world, present] = *ranks.begin();
  for (int64_t r = 0; r < world; ++r) {
    if (present.count(r)) continue;
    const std::string missing = "rank-" + std::to_string(r) + "-of-" + std::to_string(world) + ".ckpt";
    std::string partial;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().filename().string().starts_with(missing + ".tmp-")) partial = entry.path().filename().string();
    throw CliError("checkpoint folder '" + dir.string() + "' is incomplete: shard " + missing + " is missing (" +
                   std::to_string(present.size()) + " of " + std::to_string(world) + " shards" +
                   (partial.empty() ? "" : "; " + partial + " is a write that never finished") +
                   "); resume from its parent folder to take the last complete checkpoint ('latest')");
  }
}

// A checkpoint file, or a folder of shards (--checkpoint-every's step-S, or
// its parent with a `latest` pointer) aggregated into the complete state.
CheckpointState load_start_state(const std::string& path) {
  if (!fs::is_directory(path)) return CheckpointState::load(path);
  fs::path dir = path;
  if (fs::exists(dir / "latest")) {
    std::ifstream in(dir / "latest");
    std::string name;
    in >> name;
    if (name.empty() || name.find('/') != std::string::npos)
      throw CliError("'" + (dir / "latest").string() + "' does not name a checkpoint folder");
    dir /= name;
  }
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".ckpt") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw CliError("no checkpoint (.ckpt) in '" + dir.string() + "'");
  check_shard_set(dir, files);
  std::vector<CheckpointState> shards;
  for (const std::string& f : files) shards.push_back(CheckpointState::load(f));
  if (shards.size() == 1) return std::move(shards[0]);
  std::vector<const CheckpointState*> list;
  for (const auto& shard : shards) list.push_back(&shard);
  return CheckpointState::aggregate(list);
}

// The options that say how scores meet labels: --class-axis, --ignore-index,
// and whether the loss is a classifier's (then accuracy means something).
struct LabelOptions {
  bool classifier = true;
  int64_t class_axis = 1;
  std::optional<int64_t> ignore_index;
};

LabelOptions label_options_from(const ParsedArgs& args) {
  LabelOptions o;
  std::string loss = args.last("--loss").value_or("crossentropy");
  o.classifier = loss == "crossentropy" || loss == "nll";
  o.class_axis = args.integer("--class-axis", 1, -1, 1);
  if (args.has("--ignore-index")) o.ignore_index = args.integer("--ignore-index", 0, INT64_MIN, INT64_MAX);
  return o;
}

// How many of `labels` are not the ignore index.
int64_t count_targets(onyx::Tensor& labels, std::optional<int64_t> ignore_index) {
  if (!ignore_index || (labels.dtype() != ONYX_DTYPE_INT64 && labels.dtype() != ONYX_DTYPE_INT32)) return labels.size();
  int64_t n = 0;
  for (int64_t i = 0; i < labels.size(); ++i)
    n += (labels.dtype() == ONYX_DTYPE_INT64 ? labels.data<int64_t>()[i] : labels.data<int32_t>()[i]) != *ignore_index;
  return n;
}

// The validation loss (and accuracy, for a classifier) of the eval model on
// `data`: rank r of N takes every N-th batch, and the ranks' sums are added.
ValidationPoint validate(onyx::TrainingSession& session, Dataset& data, int64_t batch, const LabelOptions& labels,
                         const std::string& scores_output, onyx::DistributedJob* job, int rank, int ranks) {
  auto names = session.input_names(true);
  auto outputs_named = session.output_names(true);
  size_t scores_at = 1;
  if (!scores_output.empty())
    scores_at = size_t(std::find(outputs_named.begin(), outputs_named.end(), scores_output) - outputs_named.begin());
  if (scores_at >= outputs_named.size()) throw CliError("the eval model has no output '" + scores_output + "'");
  const size_t labels_at = size_t(std::find(names.begin(), names.end(), "labels") - names.begin());
  if (labels.classifier && labels_at == names.size()) throw CliError("the eval model takes no labels");
  ScoreTally tally;
  double loss_sum = 0, samples = 0;
  std::vector<int64_t> indices(static_cast<size_t>(batch));
  for (int64_t first = int64_t(rank) * batch; first < data.count; first += int64_t(ranks) * batch) {
    const int64_t n = std::min(batch, data.count - first);
    for (int64_t k = 0; k < n; ++k) indices[size_t(k)] = first + k;
    std::vector<onyx::Tensor> inputs;
    std::vector<const onyx::Tensor*> pointers;
    for (const auto& name : names) {
      inputs.push_back(data.batch_for(name, n));
      data.gather(name, indices.data(), n, inputs.back());
    }
    for (const auto& t : inputs) pointers.push_back(&t);
    auto outputs = session.eval_step(pointers);
    loss_sum += double(outputs[0].data<float>()[0]) * double(n);
    samples += double(n);
    if (labels.classifier)
      tally.add(outputs[scores_at], inputs[labels_at], labels.class_axis, labels.ignore_index, data.source);
  }
  std::vector<double> sums = {loss_sum, samples, double(tally.counted), double(tally.correct), tally.nll};
  if (job) job->sum(sums);
  ValidationPoint point;
  if (labels.classifier) {  // the token- (or sample-) weighted mean, exactly
    point.loss = sums[2] > 0 ? sums[4] / sums[2] : 0;
    point.accuracy = sums[2] > 0 ? sums[3] / sums[2] : 0;
  } else {
    point.loss = sums[1] > 0 ? sums[0] / sums[1] : 0;
    point.accuracy = -1;
  }
  return point;
}

int run_train(const ParsedArgs& args) {
  std::string model = model_path_from(args, "train");
  std::string data_dir = args.last("--data").value_or(kDefaultData);
  fs::path out = args.last("--out").value_or("train-out");
  int64_t epochs = args.integer("--epochs", 1, 1, 100000);
  int64_t batch = args.integer("--batch-size", 64, 1, 1 << 20);
  int64_t max_steps = args.integer("--max-steps", 0, 0, int64_t(1) << 40);
  int64_t eval_every = args.integer("--eval-every", 0, 0, int64_t(1) << 40);
  uint64_t seed = uint64_t(args.integer("--seed", 1, 0, int64_t(1) << 62));
  const bool shuffle = !args.has("--no-shuffle");
  const LabelOptions label_options = label_options_from(args);
  double lr = 1e-3;
  if (auto text = args.last("--lr")) {
    try {
      lr = std::stod(*text);
    } catch (const std::exception&) {
      throw CliError("--lr '" + *text + "' is not a number");
    }
  }
  // Data parallelism: --batch-size is the global batch; rank r of N trains
  // on its r-th part of each (split by position in the shuffled order, the
  // same on every rank), in --grad-accum micro-batches.
  int64_t accum = args.integer("--grad-accum", 1, 1, 1 << 20);
  std::optional<onyx::DistributedJob> job;
  if (auto collectives = args.last("--distributed")) job.emplace(*collectives);
  const int rank = job ? job->rank() : 0, ranks = job ? job->size() : 1;
  const bool lead = rank == 0;  // prints, and writes the outputs
  if (batch % (int64_t(ranks) * accum) != 0)
    throw CliError("--batch-size " + std::to_string(batch) + " does not split into " + std::to_string(ranks) +
                   " rank(s) x " + std::to_string(accum) + " micro-batch(es)");
  const int64_t micro = batch / ranks / accum;
  if ((args.has("--zero") || args.has("--bucket-bytes")) && !job)
    throw CliError("--zero and --bucket-bytes need --distributed");
  ModelInterface interface = read_model_interface(model);
  Dataset train = load_dataset(data_dir, "train", interface.first_input, interface.first_input_rank);
  const bool arrays = is_array_dataset(data_dir, "train");
  // Validation: the IDX sets' t10k split, or an array set's valid/ folder.
  std::string valid_split = args.last("--valid-split").value_or(arrays ? "valid" : "t10k");
  std::optional<Dataset> valid;
  if (valid_split == "none")
    ;  // no validation
  else if (has_split(data_dir, valid_split))
    valid = load_dataset(data_dir, valid_split, interface.first_input, interface.first_input_rank);
  else if (args.has("--valid-split"))
    throw CliError("--valid-split: " + data_dir + " has no split '" + valid_split + "'");
  if (label_options.classifier) {
    check_labels(train, interface.classes, label_options.ignore_index);
    if (valid) check_labels(*valid, interface.classes, label_options.ignore_index);
  }
  int64_t steps_per_epoch = train.count / batch;  // the last partial batch is dropped
  if (steps_per_epoch == 0) throw CliError("--batch-size " + std::to_string(batch) + " exceeds the training set");
  int64_t total = epochs * steps_per_epoch;
  if (max_steps > 0) total = std::min(total, max_steps);

  fs::path artifacts = out / "artifacts";
  fs::create_directories(out);
  auto options = artifact_options_from(args);
  if (lead)
    std::cout << "onyx train: " << model << " on " << train.source << " (" << train.count << " samples), " << epochs
              << " epoch(s) of " << steps_per_epoch << " steps, batch " << batch
              << (job ? ", " + std::to_string(ranks) + " rank(s) of " + std::to_string(micro * accum) : std::string())
              << (accum > 1 ? ", " + std::to_string(accum) + " micro-batches of " + std::to_string(micro) : std::string())
              << (valid ? "; validation on " + valid->source + " (" + std::to_string(valid->count) + " samples)"
                        : std::string())
              << "\n";
  onyx::Env env;
  try {
    onyx::generate_artifacts(model, options, artifacts.string());
  } catch (const onyx::Error& e) {
    throw CliError("artifacts for '" + model + "': " + e.what());
  }
  // --resume: parameters and optimizer state from an earlier run's checkpoint
  // (the session refuses one that does not fit the model, naming the parameter),
  // or from a folder of shards written by --checkpoint-every at any world size.
  std::string start_checkpoint = args.last("--resume").value_or((artifacts / "checkpoint.ckpt").string());
  auto state = load_start_state(start_checkpoint);
  if (args.has("--resume") && lead) std::cout << "resuming from " << start_checkpoint << "\n";
  // The data cursor of a run's checkpoint folder (--checkpoint-every): the
  // steps it had taken. A checkpoint file restarts the data from the start.
  int64_t first_step = 0;
  if (args.has("--resume") && fs::is_directory(start_checkpoint)) {
    OnyxPropertyType type{};
    int64_t done = 0;
    if (onyx_checkpoint_get_property(state.get(), kStepProperty, &type, &done, nullptr, nullptr) == nullptr &&
        type == ONYX_PROPERTY_INT)
      first_step = std::max<int64_t>(0, done);
  }
  onyx::TrainingSession session(env, state, (artifacts / "training.onnx").string(), (artifacts / "eval.onnx").string(),
                                (artifacts / "optimizer.onnx").string(), session_options_from(args));
  for (const std::string& hp : args.all("--hp")) {
    size_t eq = hp.find('=');
    if (eq == std::string::npos) throw CliError("--hp '" + hp + "' is not NAME=VALUE");
    try {
      session.set_hyperparameter(hp.substr(0, eq), std::stof(hp.substr(eq + 1)));
    } catch (const std::invalid_argument&) {
      throw CliError("--hp '" + hp + "': the value is not a number");
    }
  }
  if (auto norm = args.last("--max-grad-norm")) session.set_max_grad_norm(std::stof(*norm));
  if (args.has("--loss-scale") || args.has("--loss-scale-growth-interval")) {
    double initial = 65536;
    if (auto text = args.last("--loss-scale")) {
      try {
        initial = std::stod(*text);
      } catch (const std::exception&) {
        throw CliError("--loss-scale '" + *text + "' is not a number");
      }
    }
    // The session refuses these unless the artifacts are --precision fp16.
    session.set_loss_scaling(initial, args.integer("--loss-scale-growth-interval", 2000, 1, int64_t(1) << 40));
  }
  std::string schedule = args.last("--lr-schedule").value_or("constant");
  if ((schedule.starts_with("linear") || schedule.starts_with("cosine")) && schedule.find("total=") == std::string::npos)
    schedule += std::string(schedule.find(':') == std::string::npos ? ":" : ",") + "total=" + std::to_string(total);
  session.set_lr_schedule(schedule, lr);
  session.set_seed(seed);
  for (int64_t k = 0; k < first_step; ++k) session.scheduler_step();  // the schedule where the run left it
  if (accum > 1) session.set_gradient_accumulation_mean(true);
  if (job) {
    std::vector<std::pair<std::string, std::string>> dp = {{"zero_stage", args.last("--zero").value_or("0")}};
    if (auto bytes = args.last("--bucket-bytes")) dp.emplace_back("bucket_bytes", *bytes);
    session.join(*job, dp);
  }

  // One batch tensor per training input, filled from the dataset's column of
  // the same name (an IDX set's images feed the first input).
  const auto names = session.input_names();
  std::vector<onyx::Tensor> inputs;
  std::vector<const onyx::Tensor*> pointers;
  for (const auto& name : names) inputs.push_back(train.batch_for(name, micro));
  for (const auto& t : inputs) pointers.push_back(&t);
  const size_t labels_at = size_t(std::find(names.begin(), names.end(), "labels") - names.begin());
  std::vector<int64_t> order(size_t(train.count));
  std::mt19937_64 rng(seed);
  bool tty = ::isatty(2);
  std::ostringstream csv, valid_csv;
  csv.precision(9);
  valid_csv.precision(9);
  csv << "step,epoch,loss,learning_rate\n";
  valid_csv << "step,epoch,validation_loss,validation_accuracy\n";
  std::vector<float> losses;
  std::vector<ValidationPoint> validation;
  auto evaluate = [&](int64_t steps_done, int64_t epoch) {
    if (!valid) return;
    ValidationPoint p = validate(session, *valid, std::max<int64_t>(micro, 64), label_options,
                                 args.last("--loss-output").value_or(""), job ? &*job : nullptr, rank, ranks);
    p.step = steps_done;
    validation.push_back(p);
    valid_csv << steps_done << "," << epoch << "," << p.loss << "," << (p.accuracy >= 0 ? p.accuracy : NAN) << "\n";
    if (!lead) return;
    char line[160];
    if (p.accuracy >= 0)
      std::snprintf(line, sizeof line, "validation after step %lld: loss %.4f, accuracy %.2f%%", (long long)steps_done,
                    p.loss, 100 * p.accuracy);
    else
      std::snprintf(line, sizeof line, "validation after step %lld: loss %.4f", (long long)steps_done, p.loss);
    std::cerr << (tty ? "\n" : "") << line << "\n" << std::flush;
  };
  // --checkpoint-every N: after every N steps each rank writes its shard into
  // OUT/checkpoints/step-S/, and once every rank has, rank 0 points
  // OUT/checkpoints/latest at that folder (written last, atomically).
  const int64_t every = args.integer("--checkpoint-every", 0, 0, int64_t(1) << 40);
  auto write_checkpoint = [&](int64_t steps_done) {
    const std::string name = "step-" + std::to_string(steps_done);
    const fs::path dir = out / "checkpoints" / name;
    fs::create_directories(dir);
    state.set_property(kStepProperty, steps_done);
    const fs::path file = dir / ("rank-" + std::to_string(rank) + "-of-" + std::to_string(ranks) + ".ckpt");
    if (job) {
      session.save_checkpoint_shard(file.string());
      std::vector<double> written = {1};
      job->sum(written);  // returns once every rank has written its shard
    } else {
      state.save(file.string());
    }
    if (lead) write_file_atomically((out / "checkpoints" / "latest").string(), name + "\n");
  };
  auto start = Clock::now();
  auto last_print = start - std::chrono::seconds(10);
  int64_t step = 0, skipped_steps = 0;
  const bool fp16 = args.last("--precision").value_or("fp32") == "fp16";
  for (int64_t epoch = 1; epoch <= epochs && step < total; ++epoch) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
    if (shuffle)
      for (size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[size_t(rng() % (i + 1))]);
    for (int64_t b = 0; b < steps_per_epoch && step < total; ++b) {
      if (step < first_step) {  // taken before the checkpoint: same shuffle, skipped
        ++step;
        continue;
      }
      double lr_now = session.learning_rate();
      session.lazy_reset_grad();
      // Micro-batches weigh by their labelled targets (all but --ignore-index),
      // so K of them make the gradient of one batch's mean over its targets.
      double loss = 0, weights = 0;  // the weighted mean over the micro-batches, then over the ranks
      for (int64_t m = 0; m < accum; ++m) {
        const int64_t first = b * batch + (int64_t(rank) * accum + m) * micro;
        for (size_t k = 0; k < names.size(); ++k) train.gather(names[k], order.data() + first, micro, inputs[k]);
        const double weight = accum > 1 && labels_at < inputs.size()
                                  ? double(count_targets(inputs[labels_at], label_options.ignore_index))
                                  : 1.0;
        if (weight == 0) continue;  // nothing to learn from; a mean over no targets is undefined
        if (accum > 1) session.set_step_weight(weight);
        auto outputs = session.train_step(pointers);
        loss += double(outputs[0].data<float>()[0]) * weight;
        weights += weight;
      }
      if (weights == 0)
        throw CliError("train: step " + std::to_string(step + 1) + " has no labelled target on rank " +
                       std::to_string(rank) + " (every label is --ignore-index)");
      loss /= weights;
      if (job) {
        std::vector<double> sum = {loss};
        job->sum(sum);  // every rank sees the global loss, so all stop together below
        loss = sum[0] / ranks;
      }
      session.optimizer_step();
      session.scheduler_step();
      // fp16 loss scaling skips a step that overflowed (and halves the scale): that is not a failure.
      const bool skipped = session.last_step_skipped();
      skipped_steps += skipped;
      if (!std::isfinite(loss) && !(skipped && fp16))
        throw CliError("train: the loss became " + std::to_string(loss) + " at step " + std::to_string(step + 1) +
                       " (lower --lr?)");
      losses.push_back(float(loss));
      csv << step + 1 << "," << epoch << "," << loss << "," << lr_now << "\n";
      ++step;
      if (every > 0 && step % every == 0) write_checkpoint(step);
      double elapsed = seconds_since(start);
      bool due = std::chrono::duration<double>(Clock::now() - last_print).count() > (tty ? 0.2 : 5.0);
      if (lead && (due || step == total)) {
        size_t window = std::min<size_t>(losses.size(), 50);
        double recent = 0;
        for (size_t i = losses.size() - window; i < losses.size(); ++i) recent += losses[i];
        print_progress(step, total, epoch, epochs, recent / double(window),
                       double((step - first_step) * batch) / elapsed, elapsed, tty);
        last_print = Clock::now();
      }
      if (eval_every > 0 && step % eval_every == 0 && step != total) evaluate(step, epoch);
    }
    evaluate(step, epoch);  // after every epoch, and the last step
  }
  double seconds = seconds_since(start);
  // Under ZeRO each rank holds a shard of the optimizer state: gather it
  // (every rank) before the lead rank saves the checkpoint.
  if (job) session.gather_optimizer_state();
  if (job && args.has("--verbose")) {
    // One write per line, so that the ranks' lines (merged by mpirun) never interleave.
    std::string line = "rank " + std::to_string(rank) + " of " + std::to_string(ranks) + ": " + job->counters() + "\n";
    std::cerr << std::flush;
    if (::write(2, line.data(), line.size()) < 0) std::cerr << line;
  }
  if (!lead) return 0;
  if (tty) std::cerr << "\n";
  write_file_atomically((out / "loss.csv").string(), csv.str());
  if (valid) write_file_atomically((out / "validation.csv").string(), valid_csv.str());
  write_file_atomically((out / "loss.svg").string(),
                        loss_svg(losses, validation, "onyx train: " + fs::path(model).filename().string()));
  state.save((out / "checkpoint.ckpt").string());
  session.export_model((out / "model.onnx").string());
  const int64_t trained = step - first_step;
  std::printf("trained %lld steps (%lld samples) in %s, %.0f samples/s\n", (long long)trained,
              (long long)(trained * batch), clock_text(seconds).c_str(), double(trained * batch) / seconds);
  if (fp16)
    std::printf("loss scaling: %lld step(s) skipped on overflow, final scale %g\n", (long long)skipped_steps,
                session.loss_scale());
  std::cout << "wrote " << (out / "loss.csv").string() << (valid ? ", " + (out / "validation.csv").string() : "")
            << ", " << (out / "loss.svg").string() << ", " << (out / "checkpoint.ckpt").string() << ", "
            << (out / "model.onnx").string() << "\n";
  return 0;
}

}  // namespace

Command train_command() {
  Command c;
  c.name = "train";
  c.summary = "train a model on an image dataset (IDX, e.g. Fashion-MNIST) or on NumPy arrays";
  c.usage = "onyx train MODEL [--data DIR] [--epochs N] [--batch-size N] [--lr X] [--optimizer NAME] [--out DIR]\n"
            "       mpirun -np N onyx train MODEL --distributed mpi [--zero 1] [--grad-accum K] ...";
  c.details =
      "Makes the training artifacts (as onyx artifacts), then trains with a progress bar on DIR's train\n"
      "split: IDX files (DIR/train-*-ubyte[.gz]; the image input may be [batch, pixels] or [batch, 1, rows,\n"
      "cols]; pixels are scaled to [0, 1]), or NumPy arrays DIR/train/<input>.npy, one per model input,\n"
      "and DIR/train/labels.npy, each [samples, ...]. After every epoch (and every --eval-every steps) the\n"
      "eval model measures the loss and, for crossentropy/nll, the accuracy on the validation split (t10k,\n"
      "or valid/ for arrays). Writes into --out (default train-out): loss.csv, validation.csv, loss.svg,\n"
      "checkpoint.ckpt, model.onnx (the trained inference model; measure it with onyx eval) and\n"
      "artifacts/. Batches are shuffled each epoch (--seed); a final partial batch is dropped.\n";
  c.options = artifact_option_specs();
  std::vector<OptionSpec> own = {
      {"--data", "DIR", std::string("IDX files or split folders of .npy arrays (default ") + kDefaultData + ")"},
      {"--epochs", "N", "passes over the training set (default 1)"},
      {"--batch-size", "N", "examples per step (default 64)"},
      {"--max-steps", "N", "stop after N steps (default: all epochs)"},
      {"--lr", "X", "learning rate (default 1e-3)"},
      {"--lr-schedule", "SPEC", "constant | linear | cosine | step, with :warmup=N,total=N,final=F,step_size=N,gamma=G"},
      {"--hp", "NAME=VALUE", "optimizer hyperparameter (momentum, beta1, weight_decay, ...); repeat"},
      {"--max-grad-norm", "X", "clip gradients to this global norm (default: off)"},
      {"--loss-scale", "X", "with --precision fp16: the initial loss scale (default 65536)"},
      {"--loss-scale-growth-interval", "N", "with --precision fp16: double the scale after N clean steps (default 2000)"},
      {"--seed", "N", "shuffling seed (default 1)"},
      {"--no-shuffle", "", "take the samples in their order (to compare with another framework step by step)"},
      {"--valid-split", "NAME", "the split validated on (default t10k for IDX, valid for arrays; none: no validation)"},
      {"--eval-every", "N", "also validate every N steps (default: after each epoch only)"},
      {"--resume", "PATH", "a checkpoint file (data restarts), or OUT/checkpoints of a run (any world size; resumes there)"},
      {"--grad-accum", "K", "average the gradients of K micro-batches per step (default 1)"},
      {"--distributed", "PLUGIN", "train data-parallel, one rank per process (mpi under mpirun; docs/distributed.md)"},
      {"--zero", "STAGE", "with --distributed: 1 shards the optimizer state over the ranks (ZeRO stage 1); default 0"},
      {"--bucket-bytes", "B", "with --distributed: the largest gradient collective (default 25 MiB; 0: one)"},
      {"--verbose", "", "with --distributed: print each rank's collective calls and bytes at the end"},
      {"--checkpoint-every", "N", "every N steps write each rank's checkpoint shard to OUT/checkpoints/step-S/"},
      {"--out", "DIR", "output folder (default train-out)"},
  };
  c.options.insert(c.options.end(), own.begin(), own.end());
  auto session_specs = session_option_specs();
  c.options.insert(c.options.end(), session_specs.begin(), session_specs.end());
  c.handler = run_train;
  return c;
}

}  // namespace onyx::cli
