// corruption_test.cpp: crash safety and damage detection. A process killed
// in the middle of a save leaves the previous checkpoint intact; truncation
// and bit flips anywhere in a file are reported (with the tensor's name when
// the damage is in its data); files of a newer format version are refused
// naming both versions.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "checkpoint_test_util.h"

namespace onyx::checkpoint {
namespace {

using testing::TempDir;

std::vector<char> read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::filesystem::path& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

Status load_status(const std::filesystem::path& path, LoadMode mode = LoadMode::kRead) {
  return load(path, {.mode = mode}).status();
}

TEST(CheckpointCorruption, EveryTruncationIsDetected) {
  TempDir dir;
  ASSERT_TRUE(save(testing::sample_checkpoint(), dir / "a.ckpt").ok());
  std::vector<char> bytes = read_all(dir / "a.ckpt");
  for (size_t size = 0; size < bytes.size(); size += (size < 128 ? 1 : 37)) {
    write_all(dir / "t.ckpt", std::vector<char>(bytes.begin(), bytes.begin() + std::ptrdiff_t(size)));
    for (LoadMode mode : {LoadMode::kRead, LoadMode::kMemoryMap}) {
      Status status = load_status(dir / "t.ckpt", mode);
      ASSERT_EQ(status.code(), ONYX_STATUS_DATA_LOSS) << "size " << size << ": " << status.to_string();
      EXPECT_NE(status.message().find("t.ckpt"), std::string::npos);
    }
  }
}

TEST(CheckpointCorruption, BitFlipsInTensorDataNameTheTensor) {
  TempDir dir;
  Checkpoint c = testing::sample_checkpoint();
  ASSERT_TRUE(save(c, dir / "a.ckpt").ok());
  StatusOr<Checkpoint> clean = load(dir / "a.ckpt", {.mode = LoadMode::kMemoryMap, .verify_data = false});
  ASSERT_TRUE(clean.ok());
  std::vector<char> bytes = read_all(dir / "a.ckpt");
  // The first tensor's data starts right after the 64-byte header: file
  // offsets follow from mapped addresses.
  const std::byte* file_start = static_cast<const std::byte*>(clean->module.trainable[0].data.data()) - 64;
  struct Target {
    const TensorRecord* tensor;
    std::string name;
  };
  std::vector<Target> targets = {{&clean->module.trainable[0], "trainable parameter 'fc1.weight'"},
                                 {&clean->module.trainable[3], "trainable parameter 'bf.weight'"},
                                 {&clean->module.frozen[0], "frozen parameter 'embedding.ids'"},
                                 {&clean->module.frozen[3], "frozen parameter 'packed'"},
                                 {&clean->optimizer[0].parameters[1].tensors[1],
                                  "optimizer group 'default' state 'momentum2' of parameter 'fc1.bias'"}};
  for (const Target& target : targets) {
    size_t offset = size_t(static_cast<const std::byte*>(target.tensor->data.data()) - file_start);
    for (size_t at : {offset, offset + target.tensor->bytes() - 1}) {
      for (int bit : {0, 7}) {
        std::vector<char> damaged = bytes;
        damaged[at] = char(damaged[at] ^ (1 << bit));
        write_all(dir / "d.ckpt", damaged);
        for (LoadMode mode : {LoadMode::kRead, LoadMode::kMemoryMap}) {
          Status status = load_status(dir / "d.ckpt", mode);
          EXPECT_EQ(status.code(), ONYX_STATUS_DATA_LOSS);
          EXPECT_NE(status.message().find(target.name + ": data checksum mismatch"), std::string::npos)
              << status.message();
        }
        // A lazy load succeeds; verify_data() finds the damage later.
        StatusOr<Checkpoint> lazy = load(dir / "d.ckpt", {.mode = LoadMode::kMemoryMap, .verify_data = false});
        ASSERT_TRUE(lazy.ok());
        EXPECT_NE(verify_data(*lazy).message().find(target.name), std::string::npos);
      }
    }
  }
}

TEST(CheckpointCorruption, EveryBitFlipOutsideTheDataIsDetected) {
  TempDir dir;
  Checkpoint c = testing::sample_checkpoint();
  ASSERT_TRUE(save(c, dir / "a.ckpt").ok());
  std::vector<char> bytes = read_all(dir / "a.ckpt");
  StatusOr<Checkpoint> clean = load(dir / "a.ckpt");
  ASSERT_TRUE(clean.ok());
  uint64_t toc_offset = 0;
  std::memcpy(&toc_offset, bytes.data() + 16, 8);
  std::vector<size_t> positions;
  for (size_t k = 0; k < 64; ++k) positions.push_back(k);                                     // header
  for (size_t k = toc_offset; k < bytes.size(); k += 3) positions.push_back(k);              // table of contents
  for (size_t at : positions) {
    std::vector<char> damaged = bytes;
    damaged[at] = char(damaged[at] ^ 0x10);
    write_all(dir / "d.ckpt", damaged);
    Status status = load_status(dir / "d.ckpt", LoadMode::kMemoryMap);
    EXPECT_FALSE(status.ok()) << "flip at byte " << at << " went unnoticed";
    if (at >= 8 && at < 12) continue;  // the version field: refused as "newer" or corrupt
    if (at < 8) {
      EXPECT_EQ(status.code(), ONYX_STATUS_INVALID_ARGUMENT) << status.to_string();  // magic: not a checkpoint
    } else {
      EXPECT_EQ(status.code(), ONYX_STATUS_DATA_LOSS) << "byte " << at << ": " << status.to_string();
    }
  }
}

// A table of contents that is damaged but carries a valid checksum (a buggy
// writer, or deliberate tampering) must be refused or parsed, never crash or
// read out of bounds: random byte changes, each re-sealed.
TEST(CheckpointCorruption, ResealedGarbageInTheTableIsRefusedSafely) {
  Checkpoint c = testing::sample_checkpoint();
  StatusOr<std::vector<std::byte>> clean = serialize(c);
  ASSERT_TRUE(clean.ok());
  uint64_t toc_offset = 0;
  std::memcpy(&toc_offset, clean->data() + 16, 8);
  uint64_t state = 99;
  int refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::byte> bytes = *clean;
    int changes = 1 + round % 4;
    for (int k = 0; k < changes; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      size_t at = toc_offset + (state >> 33) % (bytes.size() - toc_offset);
      bytes[at] = std::byte(state >> 25);
    }
    uint32_t toc_crc = crc32c(std::span<const std::byte>(bytes).subspan(toc_offset));
    std::memcpy(bytes.data() + 40, &toc_crc, 4);
    uint32_t header_crc = crc32c(std::span<const std::byte>(bytes).first(60));
    std::memcpy(bytes.data() + 60, &header_crc, 4);
    StatusOr<Checkpoint> loaded = load_from_memory(bytes);
    if (!loaded.ok()) {
      ++refused;
      EXPECT_EQ(loaded.status().code(), ONYX_STATUS_DATA_LOSS) << loaded.status().to_string();
    }
  }
  std::printf("%d of 3000 damaged tables refused\n", refused);
  EXPECT_GT(refused, 1500);  // most changes break the structure; some only rename or renumber
}

// bad-inputs.md, class 1: a float64 tensor whose shape was rewritten from [1]
// to [2^61 + 1] (8 * (2^61 + 1) bytes wraps to the 8 stored), checksums
// re-sealed, is refused as an invalid shape, not accepted with a wrapped size.
TEST(CheckpointCorruption, ShapeWhoseByteSizeWrapsIsRefused) {
  Checkpoint c;
  runtime::Tensor value = runtime::Tensor::allocate(ONYX_DTYPE_FLOAT64, {1});
  c.module.trainable.push_back({"wraps", ONYX_DTYPE_FLOAT64, {1}, value, std::nullopt, std::nullopt});
  StatusOr<std::vector<std::byte>> clean = serialize(c);
  ASSERT_TRUE(clean.ok()) << clean.status().to_string();
  std::vector<std::byte> bytes = *clean;
  uint64_t toc_offset = 0;
  std::memcpy(&toc_offset, bytes.data() + 16, 8);
  // dtype 11 (float64), rank 1, dim 1: the record's type, in the table.
  const uint32_t dtype = ONYX_DTYPE_FLOAT64, rank = 1;
  const int64_t dim = 1, wrapping = (int64_t(1) << 61) + 1;
  std::vector<std::byte> pattern(16);
  std::memcpy(pattern.data(), &dtype, 4);
  std::memcpy(pattern.data() + 4, &rank, 4);
  std::memcpy(pattern.data() + 8, &dim, 8);
  auto at = std::search(bytes.begin() + std::ptrdiff_t(toc_offset), bytes.end(), pattern.begin(), pattern.end());
  ASSERT_NE(at, bytes.end()) << "the record's dims were not found in the table";
  std::memcpy(&*(at + 8), &wrapping, 8);
  uint32_t toc_crc = crc32c(std::span<const std::byte>(bytes).subspan(toc_offset));
  std::memcpy(bytes.data() + 40, &toc_crc, 4);
  uint32_t header_crc = crc32c(std::span<const std::byte>(bytes).first(60));
  std::memcpy(bytes.data() + 60, &header_crc, 4);
  StatusOr<Checkpoint> loaded = load_from_memory(bytes);
  ASSERT_FALSE(loaded.ok()) << "a [2^61 + 1] float64 tensor of 8 bytes was accepted";
  EXPECT_NE(loaded.status().message().find("'wraps' has an invalid shape [2305843009213693953]"), std::string::npos)
      << loaded.status().to_string();
}

// bad-inputs.md, class 5: two tensors whose records point at one data range
// (equal values, so each checksum still matches) are refused: they alias.
TEST(CheckpointCorruption, TensorsSharingDataBytesAreRefused) {
  Checkpoint c;
  for (const char* name : {"first", "second"}) {
    runtime::Tensor value = runtime::Tensor::allocate(ONYX_DTYPE_FLOAT32, {4});
    for (int i = 0; i < 4; ++i) value.data_as<float>()[i] = float(i);
    c.module.trainable.push_back({name, ONYX_DTYPE_FLOAT32, {4}, value, std::nullopt, std::nullopt});
  }
  StatusOr<std::vector<std::byte>> clean = serialize(c);
  ASSERT_TRUE(clean.ok()) << clean.status().to_string();
  std::vector<std::byte> bytes = *clean;
  uint64_t toc_offset = 0;
  std::memcpy(&toc_offset, bytes.data() + 16, 8);
  // Each record stores (data offset u64, bytes u64 = 16); point the second at the first's data.
  std::vector<uint64_t> offsets;
  for (size_t at = toc_offset; at + 16 <= bytes.size(); ++at) {
    uint64_t offset = 0, size = 0;
    std::memcpy(&offset, bytes.data() + at, 8);
    std::memcpy(&size, bytes.data() + at + 8, 8);
    if (size == 16 && offset >= 64 && offset < toc_offset) offsets.push_back(at);
  }
  ASSERT_EQ(offsets.size(), 2u) << "the records' data ranges were not found in the table";
  std::memcpy(bytes.data() + offsets[1], bytes.data() + offsets[0], 8);
  uint32_t toc_crc = crc32c(std::span<const std::byte>(bytes).subspan(toc_offset));
  std::memcpy(bytes.data() + 40, &toc_crc, 4);
  uint32_t header_crc = crc32c(std::span<const std::byte>(bytes).first(60));
  std::memcpy(bytes.data() + 60, &header_crc, 4);
  StatusOr<Checkpoint> loaded = load_from_memory(bytes);
  ASSERT_FALSE(loaded.ok()) << "two tensors sharing one data range were accepted";
  EXPECT_NE(loaded.status().message().find("'first' and trainable parameter 'second' share data bytes"),
            std::string::npos)
      << loaded.status().to_string();
}

// bad-inputs.md, class 3: a checkpoint path that is a FIFO blocked open(2)
// forever. It is refused, naming the path, without waiting for a writer (in
// a child process, so that a regression fails the test instead of hanging it).
TEST(CheckpointCorruption, FifoPathIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::filesystem::path fifo = dir / "state.ckpt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Status s = load_status(fifo);
    ::_exit(s.ok() ? 1 : s.message().find("is not a regular file") != std::string::npos ? 0 : 2);
  }
  int status = 0;
  bool ended = false;
  for (int waited = 0; waited < 100 && !ended; ++waited) {
    ended = ::waitpid(child, &status, WNOHANG) == child;
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!ended) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "loading a FIFO blocked for 10 s";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: accepted, 2: refused without saying it is not a regular file";
}

// Rewrites a file's version field and re-seals the header checksum, as a
// later format version would write it.
void set_version(std::vector<char>& bytes, uint32_t version) {
  std::memcpy(bytes.data() + 8, &version, 4);
  uint32_t crc = crc32c({reinterpret_cast<const std::byte*>(bytes.data()), 60});
  std::memcpy(bytes.data() + 60, &crc, 4);
}

TEST(CheckpointCorruption, NewerFormatVersionIsRefusedNamingBothVersions) {
  TempDir dir;
  ASSERT_TRUE(save(testing::sample_checkpoint(), dir / "a.ckpt").ok());
  std::vector<char> bytes = read_all(dir / "a.ckpt");
  set_version(bytes, kFormatVersion + 1);
  write_all(dir / "new.ckpt", bytes);
  Status status = load_status(dir / "new.ckpt");
  EXPECT_EQ(status.code(), ONYX_STATUS_INCOMPATIBLE);
  EXPECT_NE(status.message().find("format version " + std::to_string(kFormatVersion + 1) +
                                  " is newer than this reader's version " + std::to_string(kFormatVersion)),
            std::string::npos)
      << status.message();
  EXPECT_EQ(status.message().find("corrupt"), std::string::npos) << status.message();
}

// Writes the test data file of the current format version (run once when a
// version is added: --gtest_also_run_disabled_tests --gtest_filter=*WriteSample*).
TEST(CheckpointCorruption, DISABLED_WriteSampleFileOfTheCurrentVersion) {
  std::filesystem::path path =
      std::filesystem::path(ONYX_CHECKPOINT_TEST_DATA) / ("sample_v" + std::to_string(kFormatVersion) + ".ckpt");
  ASSERT_TRUE(save(testing::sample_checkpoint(), path).ok());
}

// Every format version this reader knows has a file in the test data, and
// each still loads to the same content. (Version 1 is the only one so far.)
TEST(CheckpointCorruption, ReadsTheCheckedInFileOfEveryFormatVersion) {
  for (uint32_t version = 1; version <= kFormatVersion; ++version) {
    std::filesystem::path path =
        std::filesystem::path(ONYX_CHECKPOINT_TEST_DATA) / ("sample_v" + std::to_string(version) + ".ckpt");
    StatusOr<Checkpoint> loaded = load(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    EXPECT_EQ(loaded->metadata.format_version, version);
    testing::expect_same(testing::sample_checkpoint(), *loaded);
  }
}

// The child saves a large checkpoint over an existing one again and again;
// the parent kills it (SIGKILL, no cleanup) while a temporary file is being
// written. The old checkpoint must load intact.
TEST(CheckpointCorruption, KillingAProcessMidSaveLeavesThePreviousCheckpoint) {
  TempDir dir;
  std::filesystem::path path = dir / "train.ckpt";
  Checkpoint old_state = testing::sample_checkpoint(11);
  ASSERT_TRUE(save(old_state, path).ok());

  Checkpoint big = testing::sample_checkpoint(12);
  big.module.frozen.push_back(testing::random_tensor("big", ONYX_DTYPE_FLOAT32, {64, 1024, 1024}, 13));  // 256 MiB
  const uint64_t big_bytes = 256ull << 20;
  const uint64_t kill_after[] = {big_bytes / 16, big_bytes / 4, big_bytes / 2};

  for (int round = 0; round < 3; ++round) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      save(big, path);  // never finishes: killed mid-way
      _exit(0);
    }
    // Wait until the temporary file holds part of the data, then kill.
    bool killed_mid_save = false;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline && !killed_mid_save) {
      for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
        std::error_code ec;
        uintmax_t size = entry.file_size(ec);
        if (entry.path().filename().string().find(".tmp-") != std::string::npos && !ec &&
            size > kill_after[round] && size < big_bytes) {
          kill(child, SIGKILL);
          killed_mid_save = true;
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    int wstatus = 0;
    waitpid(child, &wstatus, 0);
    ASSERT_TRUE(killed_mid_save) << "the save finished before it could be interrupted";
    ASSERT_TRUE(WIFSIGNALED(wstatus));

    StatusOr<Checkpoint> loaded = load(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    testing::expect_same(old_state, *loaded);
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
      if (entry.path() != path) std::filesystem::remove(entry.path());  // the dead save's leftover
  }
  // A save that completes replaces it.
  ASSERT_TRUE(save(testing::sample_checkpoint(14), path).ok());
  StatusOr<Checkpoint> loaded = load(path);
  ASSERT_TRUE(loaded.ok());
  testing::expect_same(testing::sample_checkpoint(14), *loaded);
}

}  // namespace
}  // namespace onyx::checkpoint
