#include <onyx/util/atomic_file.h>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace onyx::util {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "onyx_atomic_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string contents(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Every file in the folder: a failed or finished write leaves no temporary file behind.
  size_t files() { return size_t(std::distance(fs::directory_iterator(dir_), fs::directory_iterator())); }

  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesAndReplaces) {
  fs::path target = dir_ / "out.txt";
  ASSERT_TRUE(write_file_atomically(target, "first").ok());
  EXPECT_EQ(contents(target), "first");
  ASSERT_TRUE(write_file_atomically(target, "second, longer").ok());
  EXPECT_EQ(contents(target), "second, longer");
  EXPECT_EQ(files(), 1u);
}

// bad-inputs.md, class 5: killed saves left their temporary files behind
// (59 after 65 kills). The next write of the same file removes those of
// processes that no longer exist, and keeps a live process's.
TEST_F(AtomicFileTest, StaleTemporariesOfDeadWritersAreRemoved) {
  fs::path target = dir_ / "state.ckpt";
  pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(dead, &status, 0), dead);  // reaped: the pid no longer exists
  const fs::path stale = dir_ / ("state.ckpt.tmp-" + std::to_string(dead) + "-3");
  const fs::path live = dir_ / ("state.ckpt.tmp-" + std::to_string(::getppid()) + "-0");
  const fs::path other = dir_ / ("other.ckpt.tmp-" + std::to_string(dead) + "-0");
  for (const fs::path& p : {stale, live, other}) std::ofstream(p) << "partial";
  ASSERT_TRUE(write_file_atomically(target, "complete").ok());
  EXPECT_FALSE(fs::exists(stale)) << "a dead writer's temporary file was left";
  EXPECT_TRUE(fs::exists(live)) << "a live process's temporary file was removed";
  EXPECT_TRUE(fs::exists(other)) << "another file's temporary file was removed";
  EXPECT_EQ(contents(target), "complete");
}

TEST_F(AtomicFileTest, CallbackAppendsAndPatches) {
  fs::path target = dir_ / "patched.bin";
  WriteResult r = write_file_atomically(target, [](TemporaryFile& f) {
    if (WriteResult a = f.append(std::string_view("XXXX-body")); !a.ok()) return a;
    EXPECT_NE(f.path().filename().string().find("patched.bin.tmp-"), std::string::npos);
    const char head[] = "HEAD";
    return f.write_at(0, std::as_bytes(std::span<const char>(head, 4)));
  });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(contents(target), "HEAD-body");
}

TEST_F(AtomicFileTest, CallbackFailureLeavesTheOldFile) {
  fs::path target = dir_ / "kept.txt";
  ASSERT_TRUE(write_file_atomically(target, "old").ok());
  WriteResult r = write_file_atomically(target, [](TemporaryFile& f) {
    (void)f.append(std::string_view("half"));
    return WriteResult::failure("serializer gave up");
  });
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "serializer gave up");
  EXPECT_EQ(r.system_error(), 0);
  EXPECT_EQ(contents(target), "old");
  EXPECT_EQ(files(), 1u);
}

TEST_F(AtomicFileTest, CallbackExceptionRemovesTheTemporaryFile) {
  fs::path target = dir_ / "thrown.txt";
  EXPECT_THROW(write_file_atomically(target, [](TemporaryFile&) -> WriteResult { throw std::runtime_error("boom"); }),
               std::runtime_error);
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(files(), 0u);
}

TEST_F(AtomicFileTest, MissingFolderNamesTheFileAndErrno) {
  fs::path target = dir_ / "no" / "such" / "out.txt";
  WriteResult r = write_file_atomically(target, "x");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.system_error(), ENOENT);
  EXPECT_NE(r.message().find("cannot create '" + (dir_ / "no" / "such").string()), std::string::npos) << r.message();
}

TEST_F(AtomicFileTest, RenameOntoAFolderFailsAndCleansUp) {
  fs::path target = dir_ / "a_folder";
  fs::create_directory(target);
  WriteResult r = write_file_atomically(target, "x");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message().find("cannot rename"), std::string::npos) << r.message();
  EXPECT_EQ(files(), 1u);  // the folder only
}

}  // namespace
}  // namespace onyx::util
