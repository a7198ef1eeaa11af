// The compiled-partition cache (ABI 1.2, session/compiled_cache.h) with the
// "autotune" test plugin, whose kernels take a few hundred milliseconds to
// compile: a second session loads them instead (at least 10x faster), with
// the same results; entries that are stale, incompatible, corrupt, truncated
// or of another format are rejected with a warning naming the file, rebuilt
// and replaced; an unwritable folder is a warning; plugins that speak ABI
// 1.0 or 1.1 work with the cache on and are never asked to serialize.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "session/compiled_cache.h"
#include "session/compiled_cache_key.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

namespace fs = std::filesystem;

const std::string kAutotune = std::string(ONYX_TEST_PLUGIN_DIR) + "/libonyx_provider_autotune.so";
// The timing test's model is large enough for compilation to dominate; the
// others use a small one, compiled in a few milliseconds.
struct Sizes {
  int64_t rows, inner, cols, out;
};
constexpr Sizes kLarge = {64, 256, 256, 128}, kSmall = {16, 64, 64, 32};

std::vector<float> random_values(size_t count, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = uniform(random);
  return v;
}

// y = (x * w1 + b1) * w2: a fused MatMul + Add group and a single MatMul.
std::string two_layer_model(const Sizes& z = kSmall, unsigned seed = 1) {
  return testing::ModelBuilder()
      .input("x", {z.rows, z.inner})
      .output("y", {z.rows, z.out})
      .initializer("w1", {z.inner, z.cols}, random_values(size_t(z.inner * z.cols), seed))
      .initializer("b1", {z.cols}, random_values(size_t(z.cols), seed + 1))
      .initializer("w2", {z.cols, z.out}, random_values(size_t(z.cols * z.out), seed + 2))
      .node("MatMul", {"x", "w1"}, {"h"}, "mm1")
      .node("Add", {"h", "b1"}, {"hb"}, "bias1")
      .node("MatMul", {"hb", "w2"}, {"y"}, "mm2")
      .bytes();
}

struct LogLines {
  std::vector<std::pair<int32_t, std::string>> lines;
  static void record(void* user, int32_t level, const char* message) {
    static_cast<LogLines*>(user)->lines.emplace_back(level, message);
  }
  size_t count(int32_t level, const std::string& part) const {
    size_t n = 0;
    for (const auto& [l, text] : lines) n += l == level && text.find(part) != std::string::npos;
    return n;
  }
};

class CompiledCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A parameterized test's name has a '/': one folder, not a folder in a folder left behind.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    folder_ = fs::temp_directory_path() / ("onyx_compiled_cache_" + std::to_string(getpid()) + "_" + name);
    fs::remove_all(folder_);
    registry_.add_search_dir(ONYX_PROVIDER_DIR);
    registry_.logger()->set(LogLines::record, &log_, ONYX_LOG_DEBUG);
    unsetenv("ONYX_TEST_AUTOTUNE_COMPAT");
  }
  void TearDown() override {
    unsetenv("ONYX_TEST_AUTOTUNE_COMPAT");
    fs::remove_all(folder_);
  }

  std::unique_ptr<Session> create(const std::string& model, const std::string& provider, const fs::path& folder,
                                  double* seconds = nullptr) {
    SessionOptions options;
    options.providers.push_back({provider, {}});
    options.compiled_cache_dir = folder.string();
    const auto start = std::chrono::steady_clock::now();
    auto s = Session::create_from_bytes(registry_, model.data(), model.size(), options);
    if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  static std::vector<std::string> outcomes(const Session& s) {
    std::vector<std::string> out;
    for (const CompiledCacheRecord& r : s.partition_report().compiled_cache) out.push_back(r.outcome);
    return out;
  }

  static std::vector<float> run(Session& s, const Sizes& z = kSmall) {
    Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {z.rows, z.inner});
    const std::vector<float> values = random_values(size_t(z.rows * z.inner), 99);
    std::memcpy(x.data(), values.data(), values.size() * sizeof(float));
    auto out = s.run({{"x", x}});
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    if (!out.ok()) return {};
    const float* y = out.value()[0].data_as<float>();
    return std::vector<float>(y, y + z.rows * z.out);
  }

  // The one entry file in the folder for the step named `step`.
  static fs::path entry_of(const Session& s, const std::string& step) {
    for (const CompiledCacheRecord& r : s.partition_report().compiled_cache)
      if (r.step.find(step) != std::string::npos) return r.file;
    return {};
  }

  fs::path folder_;
  LogLines log_;  // outlives the registry, whose plugins may log while destroyed
  ProviderRegistry registry_;
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    ASSERT_NEAR(got[k], want[k], 1e-3f * (1.0f + std::fabs(want[k]))) << "element " << k;
}

TEST_F(CompiledCacheTest, SecondSessionLoadsKernelsAtLeastTenTimesFaster) {
  ASSERT_TRUE(registry_.get(kAutotune).ok());  // loading the plugin is not part of either time
  const std::string model = two_layer_model(kLarge);
  double first = 0, second = 0;
  auto compiled = create(model, kAutotune, folder_, &first);
  ASSERT_TRUE(compiled);
  EXPECT_EQ(outcomes(*compiled), (std::vector<std::string>{"stored", "stored"}));
  EXPECT_EQ(log_.count(ONYX_LOG_INFO, "autotune: tuned MatMul"), 2u);
  auto loaded = create(model, kAutotune, folder_, &second);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(outcomes(*loaded), (std::vector<std::string>{"hit", "hit"}));
  EXPECT_EQ(log_.count(ONYX_LOG_INFO, "autotune: tuned MatMul"), 2u) << "a hit must not tune again";
  EXPECT_EQ(log_.count(ONYX_LOG_INFO, "compiled cache: 2 hit"), 1u);
  std::printf("session creation: %.1f ms compiling, %.1f ms from the cache (%.0fx)\n", first * 1e3, second * 1e3,
              first / second);
  EXPECT_GE(first, 10 * second) << "first " << first << " s, second " << second << " s";
  // The same tiling and packed weights: the same bits. And right: the CPU provider agrees.
  const std::vector<float> y = run(*compiled, kLarge);
  EXPECT_EQ(run(*loaded, kLarge), y);
  auto cpu = create(model, "cpu", "");
  ASSERT_TRUE(cpu);
  expect_close(y, run(*cpu, kLarge));
  const std::string report = loaded->partition_report().to_json(loaded->graph());
  const size_t section = report.find("\"compiled_cache\"");
  ASSERT_NE(section, std::string::npos) << report;
  EXPECT_NE(report.find("MatMul 'mm1'", section), std::string::npos) << report;
  EXPECT_NE(report.find("\"hit\"", section), std::string::npos) << report;
}

TEST_F(CompiledCacheTest, ChangedWeightsAreADifferentEntry) {
  auto first = create(two_layer_model(kSmall, 1), kAutotune, folder_);
  auto other = create(two_layer_model(kSmall, 5), kAutotune, folder_);
  ASSERT_TRUE(first && other);
  EXPECT_EQ(outcomes(*other), (std::vector<std::string>{"stored", "stored"}));
  EXPECT_NE(entry_of(*first, "mm1"), entry_of(*other, "mm1"));
  EXPECT_EQ(log_.count(ONYX_LOG_WARNING, "compiled cache"), 0u);
}

// How a test damages the first group's entry, and what the warning must say.
struct Damage {
  const char* name;
  void (*apply)(const fs::path& file);
  const char* reason;
};

void put_u64(std::string& bytes, size_t at, uint64_t v) {
  for (size_t k = 0; k < 8; ++k) bytes[at + k] = char((v >> (8 * k)) & 0xFF);
}

const Damage kDamages[] = {
    {"flipped_blob_byte",
     [](const fs::path& f) {
       std::string b = read_bytes(f);
       b[b.size() - 5] ^= 0x40;
       write_bytes(f, b);
     },
     "does not match its checksum"},
    {"truncated",
     [](const fs::path& f) {
       std::string b = read_bytes(f);
       write_bytes(f, b.substr(0, b.size() / 2));
     },
     "truncated or corrupt"},
    {"shorter_than_header", [](const fs::path& f) { write_bytes(f, "ONYXKRNL"); }, "shorter than the 40-byte header"},
    {"format_version",
     [](const fs::path& f) {
       std::string b = read_bytes(f);
       b[8] = 2;
       write_bytes(f, b);
     },
     "format version 2, this host reads version 1"},
    {"not_an_entry", [](const fs::path& f) { write_bytes(f, std::string(64, 'x')); }, "no ONYXKRNL magic"},
    // A blob whose checksum holds but which the plugin refuses: its own layout
    // version (bytes 4..7 of the blob) changed.
    {"plugin_layout",
     [](const fs::path& f) {
       std::string b = read_bytes(f);
       const size_t key = size_t(uint8_t(b[16])) | size_t(uint8_t(b[17])) << 8 | size_t(uint8_t(b[18])) << 16;
       const size_t blob = kCompiledCacheHeaderBytes + key;
       b[blob + 4] = 9;
       put_u64(b, 32, hash_bytes(b.data() + blob, b.size() - blob));
       write_bytes(f, b);
     },
     "the plugin refused it (INCOMPATIBLE): autotune: blob layout 9"},
};

class DamagedEntryTest : public CompiledCacheTest, public ::testing::WithParamInterface<Damage> {};

TEST_P(DamagedEntryTest, IsRejectedWithAWarningRebuiltAndReplaced) {
  const std::string model = two_layer_model();
  auto first = create(model, kAutotune, folder_);
  ASSERT_TRUE(first);
  const std::vector<float> y = run(*first);
  const fs::path file = entry_of(*first, "mm1");
  GetParam().apply(file);

  auto rebuilt = create(model, kAutotune, folder_);
  ASSERT_TRUE(rebuilt);
  EXPECT_EQ(outcomes(*rebuilt), (std::vector<std::string>{"rebuilt", "hit"}));
  ASSERT_EQ(log_.count(ONYX_LOG_WARNING, "compiled cache: rejected '" + file.string() + "'"), 1u);
  EXPECT_EQ(log_.count(ONYX_LOG_WARNING, GetParam().reason), 1u) << log_.lines.back().second;
  expect_close(run(*rebuilt), y);  // the autotuner may choose another tiling: the sums' order may differ
  auto again = create(model, kAutotune, folder_);
  ASSERT_TRUE(again);
  EXPECT_EQ(outcomes(*again), (std::vector<std::string>{"hit", "hit"}));
}

INSTANTIATE_TEST_SUITE_P(CompiledCache, DamagedEntryTest, ::testing::ValuesIn(kDamages),
                         [](const auto& test) { return std::string(test.param.name); });

TEST_F(CompiledCacheTest, AnotherCompatibilityStringIsRejectedAndReplaced) {
  const std::string model = two_layer_model();
  auto first = create(model, kAutotune, folder_);
  ASSERT_TRUE(first);
  setenv("ONYX_TEST_AUTOTUNE_COMPAT", "driver-2", 1);  // a driver or plugin update
  auto updated = create(model, kAutotune, folder_);
  ASSERT_TRUE(updated);
  EXPECT_EQ(outcomes(*updated), (std::vector<std::string>{"rebuilt", "rebuilt"}));
  EXPECT_EQ(entry_of(*updated, "mm1"), entry_of(*first, "mm1")) << "the stale entry is replaced, not kept beside";
  EXPECT_EQ(log_.count(ONYX_LOG_WARNING,
                       "'compatibility autotune gemm layout 1' instead of 'compatibility autotune gemm layout 1 "
                       "driver-2'"),
            2u);
  expect_close(run(*updated), run(*first));
  auto again = create(model, kAutotune, folder_);
  ASSERT_TRUE(again);
  EXPECT_EQ(outcomes(*again), (std::vector<std::string>{"hit", "hit"}));
}

TEST_F(CompiledCacheTest, UnwritableFolderIsAWarningNotAFailure) {
  fs::create_directories(folder_);
  write_bytes(folder_ / "a_file", "not a folder");
  auto s = create(two_layer_model(), kAutotune, folder_ / "a_file" / "cache");
  ASSERT_TRUE(s);
  EXPECT_EQ(outcomes(*s), (std::vector<std::string>{"not stored", "not stored"}));
  EXPECT_EQ(log_.count(ONYX_LOG_WARNING, "compiled cache: cannot store"), 1u) << "one warning per session";
  EXPECT_EQ(run(*s).size(), size_t(kSmall.rows * kSmall.out));
}

TEST_F(CompiledCacheTest, PluginsWithoutTheCacheWorkWithItOn) {
  // An ABI 1.0 plugin, the CPU provider (no cache functions) and the autotune
  // plugin built for ABI 1.0-1.1: each runs and is never asked to serialize.
  const std::string model = two_layer_model();
  auto reference = create(model, "cpu", "");
  ASSERT_TRUE(reference);
  const std::vector<float> y = run(*reference);
  for (const std::string& provider : {std::string(ONYX_TEST_PLUGIN_DIR) + "/libonyx_provider_autotune_1_1.so",
                                     std::string("cpu")}) {
    auto s = create(model, provider, folder_);
    ASSERT_TRUE(s) << provider;
    for (const CompiledCacheRecord& r : s->partition_report().compiled_cache) {
      EXPECT_EQ(r.outcome, "not cached") << provider;
      EXPECT_NE(r.reason.find("ABI 1.2"), std::string::npos) << r.reason;
    }
    expect_close(run(*s), y);
  }
  EXPECT_FALSE(fs::exists(folder_)) << "nothing stored";

  std::string relu = testing::ModelBuilder()
                         .input("x", {2, 3})
                         .output("y", {2, 3})
                         .node("Relu", {"x"}, {"y"}, "relu0")
                         .bytes();
  SessionOptions options;
  options.providers = {{std::string(ONYX_TEST_PLUGIN_DIR) + "/libonyx_provider_decliner.so", {}}, {"cpu", {}}};
  options.compiled_cache_dir = folder_.string();
  auto s = Session::create_from_bytes(registry_, relu.data(), relu.size(), options);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s.value()->partition_report().compiled_cache.size(), 1u);
  EXPECT_EQ(s.value()->partition_report().compiled_cache[0].device, "decliner");
  EXPECT_EQ(s.value()->partition_report().compiled_cache[0].outcome, "not cached");
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = float(i - 3);
  auto out = s.value()->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out.value()[0].data_as<float>()[i], std::max(float(i - 3), 0.0f));
}

}  // namespace
}  // namespace onyx::runtime
