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

// The forward model's first input rank and its first output's class count.
struct ModelShape {
  int rank = 2;
  int64_t classes = -1;
};

ModelShape read_model_shape(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ONNX_NAMESPACE::ModelProto model;
  if (!in || !model.ParseFromIstream(&in)) throw CliError("cannot read '" + path + "' as an ONNX model");
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  ModelShape shape;
  for (const auto& input : model.graph().input()) {
    if (initializers.count(input.name())) continue;
    shape.rank = input.type().tensor_type().shape().dim_size();
    break;
  }
  if (model.graph().output_size() > 0) {
    const auto& dims = model.graph().output(0).type().tensor_type().shape();
    if (dims.dim_size() == 2 && dims.dim(1).has_dim_value()) shape.classes = dims.dim(1).dim_value();
  }
  if (shape.rank != 2 && shape.rank != 4)
    throw CliError("'" + path + "': the image input must be [batch, pixels] or [batch, 1, rows, cols]; it has rank " +
                   std::to_string(shape.rank));
  return shape;
}

std::vector<int64_t> batch_dims(const ModelShape& shape, const ImageDataset& data, int64_t batch) {
  if (shape.rank == 2) return {batch, data.pixels_per_image()};
  return {batch, 1, data.rows, data.cols};
}

// A line chart of the per-step loss (light) and its running mean (dark).
std::string loss_svg(const std::vector<float>& losses, const std::string& title) {
  const double width = 800, height = 420, left = 60, right = 20, top = 40, bottom = 50;
  double hi = 0;
  for (float l : losses) hi = std::max(hi, double(l));
  hi = hi > 0 ? hi * 1.05 : 1;
  size_t n = std::max<size_t>(losses.size(), 2);
  auto x = [&](size_t i) { return left + (width - left - right) * double(i) / double(n - 1); };
  auto y = [&](double v) { return top + (height - top - bottom) * (1 - v / hi); };
  std::ostringstream svg;
  svg.precision(5);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << title << "</text>\n"
      << "<line x1=\"" << left << "\" y1=\"" << y(0) << "\" x2=\"" << width - right << "\" y2=\"" << y(0)
      << "\" stroke=\"black\"/>\n<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << y(0)
      << "\" stroke=\"black\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    double v = hi * k / 4;
    svg << "<text x=\"" << left - 6 << "\" y=\"" << y(v) + 4 << "\" text-anchor=\"end\">" << v << "</text>\n";
  }
  svg << "<text x=\"" << left << "\" y=\"" << height - 15 << "\">step 0</text>\n<text x=\"" << width - right
      << "\" y=\"" << height - 15 << "\" text-anchor=\"end\">step " << losses.size() << "</text>\n";
  auto polyline = [&](const std::vector<double>& values, const char* style) {
    svg << "<polyline fill=\"none\" " << style << " points=\"";
    size_t stride = std::max<size_t>(1, values.size() / 2000);  // at most ~2000 points
    for (size_t i = 0; i < values.size(); i += stride) svg << x(i) << "," << y(values[i]) << " ";
    svg << "\"/>\n";
  };
  std::vector<double> raw(losses.begin(), losses.end()), mean(losses.size());
  double sum = 0;
  const size_t window = std::max<size_t>(1, losses.size() / 50);
  for (size_t i = 0; i < raw.size(); ++i) {
    sum += raw[i];
    if (i >= window) sum -= raw[i - window];
    mean[i] = sum / double(std::min(i + 1, window));
  }
  polyline(raw, "stroke=\"#9ecae1\" stroke-width=\"1\"");
  polyline(mean, "stroke=\"#08519c\" stroke-width=\"2\"");
  svg << "<text x=\"" << width - right << "\" y=\"" << top << "\" text-anchor=\"end\" fill=\"#08519c\">loss (mean of "
      << window << " steps)</text>\n</svg>\n";
  return svg.str();
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

int run_train(const ParsedArgs& args) {
  std::string model = model_path_from(args, "train");
  std::string data_dir = args.last("--data").value_or(kDefaultData);
  fs::path out = args.last("--out").value_or("train-out");
  int64_t epochs = args.integer("--epochs", 1, 1, 100000);
  int64_t batch = args.integer("--batch-size", 64, 1, 1 << 20);
  int64_t max_steps = args.integer("--max-steps", 0, 0, int64_t(1) << 40);
  uint64_t seed = uint64_t(args.integer("--seed", 1, 0, int64_t(1) << 62));
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
  ModelShape shape = read_model_shape(model);
  ImageDataset train = load_idx_dataset(data_dir, "train");
  if (shape.classes > 0) check_labels(train, shape.classes, data_dir + " train");
  int64_t steps_per_epoch = train.count / batch;  // the last partial batch is dropped
  if (steps_per_epoch == 0) throw CliError("--batch-size " + std::to_string(batch) + " exceeds the training set");
  int64_t total = epochs * steps_per_epoch;
  if (max_steps > 0) total = std::min(total, max_steps);

  fs::path artifacts = out / "artifacts";
  fs::create_directories(out);
  auto options = artifact_options_from(args);
  if (lead)
    std::cout << "onyx train: " << model << " on " << data_dir << " (" << train.count << " images), " << epochs
              << " epoch(s) of " << steps_per_epoch << " steps, batch " << batch
              << (job ? ", " + std::to_string(ranks) + " rank(s) of " + std::to_string(micro * accum) : std::string())
              << (accum > 1 ? ", " + std::to_string(accum) + " micro-batches of " + std::to_string(micro) : std::string())
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

  auto names = session.input_names();
  if (names.size() != 2) throw CliError("train: the training model takes " + std::to_string(names.size()) +
                                        " data inputs; onyx train feeds one image input and the labels");
  onyx::Tensor x = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, batch_dims(shape, train, micro));
  onyx::Tensor labels = onyx::Tensor::zeros(ONYX_DTYPE_INT64, {micro});
  std::vector<int64_t> order(size_t(train.count));
  std::mt19937_64 rng(seed);
  bool tty = ::isatty(2);
  std::ostringstream csv;
  csv.precision(9);
  csv << "step,epoch,loss,learning_rate\n";
  std::vector<float> losses;
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
  int64_t step = 0;
  for (int64_t epoch = 1; epoch <= epochs && step < total; ++epoch) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
    for (size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[size_t(rng() % (i + 1))]);
    for (int64_t b = 0; b < steps_per_epoch && step < total; ++b) {
      if (step < first_step) {  // taken before the checkpoint: same shuffle, skipped
        ++step;
        continue;
      }
      const int64_t ppi = train.pixels_per_image();
      double lr_now = session.learning_rate();
      session.lazy_reset_grad();
      double loss = 0;  // the mean over the micro-batches, then over the ranks
      for (int64_t m = 0; m < accum; ++m) {
        const int64_t first = b * batch + (int64_t(rank) * accum + m) * micro;
        for (int64_t k = 0; k < micro; ++k) {
          int64_t idx = order[size_t(first + k)];
          std::copy_n(train.pixels.data() + idx * ppi, ppi, x.data<float>() + k * ppi);
          labels.data<int64_t>()[k] = train.labels[size_t(idx)];
        }
        auto outputs = session.train_step({&x, &labels});
        loss += double(outputs[0].data<float>()[0]) / double(accum);
      }
      if (job) {
        std::vector<double> sum = {loss};
        job->sum(sum);  // every rank sees the global loss, so all stop together below
        loss = sum[0] / ranks;
      }
      session.optimizer_step();
      session.scheduler_step();
      if (!std::isfinite(loss)) throw CliError("train: the loss became " + std::to_string(loss) + " at step " +
                                               std::to_string(step + 1) + " (lower --lr?)");
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
    }
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
  write_file_atomically((out / "loss.svg").string(), loss_svg(losses, "onyx train: " + fs::path(model).filename().string()));
  state.save((out / "checkpoint.ckpt").string());
  session.export_model((out / "model.onnx").string());
  const int64_t trained = step - first_step;
  std::printf("trained %lld steps (%lld samples) in %s, %.0f samples/s\n", (long long)trained,
              (long long)(trained * batch), clock_text(seconds).c_str(), double(trained * batch) / seconds);
  std::cout << "wrote " << (out / "loss.csv").string() << ", " << (out / "loss.svg").string() << ", "
            << (out / "checkpoint.ckpt").string() << ", " << (out / "model.onnx").string() << "\n";
  return 0;
}

int run_eval(const ParsedArgs& args) {
  std::string model = model_path_from(args, "eval");
  std::string data_dir = args.last("--data").value_or(kDefaultData);
  std::string split = args.last("--split").value_or("t10k");
  int64_t batch = args.integer("--batch-size", 500, 1, 1 << 20);
  ModelShape shape = read_model_shape(model);
  ImageDataset data = load_idx_dataset(data_dir, split);
  onyx::Env env;
  auto session = open_session(env, model, session_options_from(args));
  auto inputs = session->inputs();
  if (inputs.size() != 1) throw CliError("eval: '" + model + "' must take one image input; it takes " +
                                         std::to_string(inputs.size()));
  auto start = Clock::now();
  int64_t correct = 0;
  for (int64_t first = 0; first < data.count; first += batch) {
    int64_t n = std::min(batch, data.count - first);
    onyx::Tensor x = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, batch_dims(shape, data, n));
    std::copy_n(data.pixels.data() + first * data.pixels_per_image(), n * data.pixels_per_image(), x.data<float>());
    auto out = session->run({{inputs[0].name, &x}});
    auto dims = out[0].shape();
    if (dims.size() != 2 || dims[0] != n || out[0].dtype() != ONYX_DTYPE_FLOAT32)
      throw CliError("eval: the model's first output must be float32 scores [batch, classes]");
    if (first == 0) check_labels(data, dims[1], data_dir + " " + split);
    const float* scores = out[0].data<float>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t best = std::max_element(scores + i * dims[1], scores + (i + 1) * dims[1]) - (scores + i * dims[1]);
      correct += best == data.labels[size_t(first + i)];
    }
  }
  double seconds = seconds_since(start);
  std::printf("accuracy: %.2f%% (%lld/%lld) on %s %s, %.0f images/s\n", 100.0 * double(correct) / double(data.count),
              (long long)correct, (long long)data.count, data_dir.c_str(), split.c_str(), double(data.count) / seconds);
  return 0;
}

}  // namespace

Command train_command() {
  Command c;
  c.name = "train";
  c.summary = "train a model on an image dataset (IDX, e.g. Fashion-MNIST)";
  c.usage = "onyx train MODEL [--data DIR] [--epochs N] [--batch-size N] [--lr X] [--optimizer NAME] [--out DIR]\n"
            "       mpirun -np N onyx train MODEL --distributed mpi [--zero 1] [--grad-accum K] ...";
  c.details =
      "Makes the training artifacts (as onyx artifacts), then trains on DIR/train-*-ubyte[.gz] with a progress\n"
      "bar. Writes into --out (default train-out): loss.csv, loss.svg, checkpoint.ckpt, model.onnx (the\n"
      "trained inference model; evaluate it with onyx eval) and artifacts/. The image input may be\n"
      "[batch, pixels] or [batch, 1, rows, cols]; pixels are scaled to [0, 1]. Batches are shuffled each\n"
      "epoch (--seed); a final partial batch is dropped.\n";
  c.options = artifact_option_specs();
  std::vector<OptionSpec> own = {
      {"--data", "DIR", std::string("folder of IDX files (default ") + kDefaultData + ")"},
      {"--epochs", "N", "passes over the training set (default 1)"},
      {"--batch-size", "N", "examples per step (default 64)"},
      {"--max-steps", "N", "stop after N steps (default: all epochs)"},
      {"--lr", "X", "learning rate (default 1e-3)"},
      {"--lr-schedule", "SPEC", "constant | linear | cosine | step, with :warmup=N,total=N,final=F,step_size=N,gamma=G"},
      {"--hp", "NAME=VALUE", "optimizer hyperparameter (momentum, beta1, weight_decay, ...); repeat"},
      {"--max-grad-norm", "X", "clip gradients to this global norm (default: off)"},
      {"--seed", "N", "shuffling seed (default 1)"},
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

Command eval_command() {
  Command c;
  c.name = "eval";
  c.summary = "classification accuracy of a model on an image dataset (IDX)";
  c.usage = "onyx eval MODEL [--data DIR] [--split t10k|train] [--batch-size N]";
  c.details = "Runs MODEL on every image of the split and compares the argmax of its first output with the labels.\n";
  c.options = {
      {"--data", "DIR", std::string("folder of IDX files (default ") + kDefaultData + ")"},
      {"--split", "NAME", "t10k (default) or train"},
      {"--batch-size", "N", "images per run (default 500)"},
  };
  auto session_specs = session_option_specs();
  c.options.insert(c.options.end(), session_specs.begin(), session_specs.end());
  c.handler = run_eval;
  return c;
}

}  // namespace onyx::cli
