// checkpoint_bench.cpp: loading a large checkpoint by memory map against
// reading and copying it, measured in the same run on the same file.
//
//   onyx_checkpoint_bench [--gib N] [--repeat N] [--dir DIR]
//
// Writes an N GiB checkpoint (16 float32 parameters plus AdamW-like state)
// into DIR (default: the system temp folder), then times, median of
// --repeat runs each, with the file in the page cache:
//   read      load(kRead), checksums off: read() the file into memory
//   map       load(kMemoryMap), checksums off: map it; no data is touched
//   map+touch map, then read one byte per 4 KiB page (what first use costs)
//   read+crc / map+crc  the same with every tensor's CRC32C checked
// and prints each beside the read baseline. The file is removed at the end.
#include <onyx/checkpoint.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace {

namespace ck = onyx::checkpoint;
using Clock = std::chrono::steady_clock;

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "onyx_checkpoint_bench: %s\nusage: onyx_checkpoint_bench [--gib N] [--repeat N] [--dir DIR]\n",
               what.c_str());
  std::exit(1);
}

long parse_positive(const char* text, const char* option) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!end || *end || v <= 0) usage_error(std::string(option) + " expects a positive integer, got '" + text + "'");
  return v;
}

// A checkpoint of about `bytes`: parameters and two state tensors each.
ck::Checkpoint make_checkpoint(size_t bytes) {
  const int64_t tensors = 16;
  const int64_t floats = int64_t(bytes / 4 / 3 / tensors);
  ck::Checkpoint c;
  c.metadata.model_identity = "checkpoint bench";
  ck::OptimizerGroup group{"default", 100, 1e-3, {}};
  uint32_t state = 12345;
  auto filled = [&](const std::string& name) {
    ck::TensorRecord t{name, ONYX_DTYPE_FLOAT32, {floats}, onyx::runtime::Tensor::allocate(ONYX_DTYPE_FLOAT32, {floats}),
                       std::nullopt, std::nullopt};
    float* p = t.data.data_as<float>();
    for (int64_t k = 0; k < floats; ++k) p[k] = float(state = state * 1664525u + 1013904223u) * 0x1p-32f;
    return t;
  };
  for (int64_t k = 0; k < tensors; ++k) {
    std::string name = "layer" + std::to_string(k) + ".weight";
    c.module.trainable.push_back(filled(name));
    group.parameters.push_back({name, {filled("momentum1"), filled("momentum2")}});
  }
  c.optimizer.push_back(std::move(group));
  return c;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median_seconds(int repeat, const std::function<void()>& body) {
  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) {
    auto start = Clock::now();
    body();
    times.push_back(seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

ck::Checkpoint load_or_die(const std::filesystem::path& path, ck::LoadOptions options) {
  onyx::runtime::StatusOr<ck::Checkpoint> c = ck::load(path, options);
  if (!c.ok()) {
    std::fprintf(stderr, "onyx_checkpoint_bench: %s\n", c.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(c).value();
}

// Reads one byte of every page of every tensor (so mapped pages fault in).
size_t touch(const ck::Checkpoint& c) {
  size_t sum = 0;
  auto visit = [&](const ck::TensorRecord& t) {
    const auto* p = static_cast<const unsigned char*>(t.data.data());
    for (size_t k = 0; k < t.bytes(); k += 4096) sum += p[k];
  };
  for (const auto& t : c.module.trainable) visit(t);
  for (const auto& g : c.optimizer)
    for (const auto& p : g.parameters)
      for (const auto& t : p.tensors) visit(t);
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  long gib = 1, repeat = 5;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (int k = 1; k < argc; ++k) {
    std::string arg = argv[k];
    if (k + 1 >= argc) usage_error("unknown or incomplete option '" + arg + "'");
    if (arg == "--gib") gib = parse_positive(argv[++k], "--gib");
    else if (arg == "--repeat") repeat = parse_positive(argv[++k], "--repeat");
    else if (arg == "--dir") dir = argv[++k];
    else usage_error("unknown option '" + arg + "'");
  }
  std::filesystem::path path = dir / ("onyx_checkpoint_bench_" + std::to_string(::getpid()) + ".ckpt");

  ck::Checkpoint c = make_checkpoint(size_t(gib) << 30);
  auto start = Clock::now();
  onyx::runtime::Status saved = ck::save(c, path);
  double save_seconds = seconds_since(start);
  if (!saved.ok()) {
    std::fprintf(stderr, "onyx_checkpoint_bench: %s\n", saved.to_string().c_str());
    return 1;
  }
  c = ck::Checkpoint();  // free the source before measuring loads
  double file_gb = double(std::filesystem::file_size(path)) / 1e9;
  std::printf("checkpoint: %.3f GB, 48 tensors, saved atomically (tmp + fsync + rename) in %.2f s (%.2f GB/s)\n",
              file_gb, save_seconds, file_gb / save_seconds);
  load_or_die(path, {ck::LoadMode::kRead, false});  // page cache warm for every variant

  size_t sink = 0;
  double read = median_seconds(int(repeat), [&] { load_or_die(path, {ck::LoadMode::kRead, false}); });
  double map = median_seconds(int(repeat), [&] { load_or_die(path, {ck::LoadMode::kMemoryMap, false}); });
  double map_touch =
      median_seconds(int(repeat), [&] { sink += touch(load_or_die(path, {ck::LoadMode::kMemoryMap, false})); });
  double read_crc = median_seconds(int(repeat), [&] { load_or_die(path, {ck::LoadMode::kRead, true}); });
  double map_crc = median_seconds(int(repeat), [&] { load_or_die(path, {ck::LoadMode::kMemoryMap, true}); });
  std::filesystem::remove(path);

  std::printf("median of %ld runs, file in the page cache; ratio = time / read-and-copy time\n", repeat);
  std::printf("  %-34s %12s %10s\n", "load", "time", "ratio");
  auto row = [&](const char* name, double t) {
    std::printf("  %-34s %9.3f ms %9.4f%%\n", name, t * 1e3, 100.0 * t / read);
  };
  row("read and copy (baseline)", read);
  row("memory map", map);
  row("memory map + touch every page", map_touch);
  row("read and copy + verify CRC32C", read_crc);
  row("memory map + verify CRC32C", map_crc);
  std::printf("memory map / read and copy = %.5f (acceptance: < 0.01); page-touch checksum %zu\n", map / read, sink);
  return map / read < 0.01 ? 0 : 2;
}
