// atomic_file.cpp: see atomic_file.h. POSIX calls throughout: the stream
// libraries cannot flush a file or a folder to disk.
#include "onyx/util/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <system_error>

namespace onyx::util {
namespace {

namespace fs = std::filesystem;

// Linux moves at most ~2 GiB per read/write call; larger writes go in chunks.
constexpr size_t kMaxIo = size_t(1) << 30;

WriteResult system_failure(const std::string& what, const fs::path& path, int error) {
  return WriteResult::failure(what + " '" + path.string() + "': " + std::generic_category().message(error), error);
}

// A name no other writer uses at the same time: the pid tells processes
// apart, the counter threads and repeated writes.
fs::path temporary_name(const fs::path& path) {
  static std::atomic<uint64_t> counter{0};
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  return tmp;
}

WriteResult flush_folder(const fs::path& folder) {
  const fs::path dir = folder.empty() ? fs::path(".") : folder;
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return system_failure("cannot open folder", dir, errno);
  int rc = ::fsync(fd);
  int error = errno;
  ::close(fd);
  if (rc != 0) return system_failure("cannot flush folder", dir, error);
  return {};
}

// Closes and removes the temporary file unless it was committed, also when
// the caller's callback throws.
class TemporaryGuard {
 public:
  TemporaryGuard(int fd, const fs::path& path) : fd_(fd), path_(path) {}
  ~TemporaryGuard() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  TemporaryGuard(const TemporaryGuard&) = delete;
  TemporaryGuard& operator=(const TemporaryGuard&) = delete;
  // Closes the file, reporting what close() says (it may report a late write error).
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void commit() { committed_ = true; }

 private:
  int fd_;
  const fs::path& path_;
  bool committed_ = false;
};

}  // namespace

WriteResult WriteResult::failure(std::string message, int system_error) {
  WriteResult r;
  r.message_ = message.empty() ? "write failed" : std::move(message);
  r.system_error_ = system_error;
  return r;
}

WriteResult TemporaryFile::append(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), std::min(bytes.size(), kMaxIo));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return system_failure("cannot write", path_, errno);
    bytes = bytes.subspan(size_t(n));
  }
  return {};
}

WriteResult TemporaryFile::append(std::string_view bytes) {
  return append(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
}

WriteResult TemporaryFile::write_at(uint64_t offset, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::pwrite(fd_, bytes.data(), std::min(bytes.size(), kMaxIo), off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return system_failure("cannot write", path_, errno);
    bytes = bytes.subspan(size_t(n));
    offset += uint64_t(n);
  }
  return {};
}

namespace {

// Temporary files of `path` left by writers that were killed mid-write
// ("<name>.tmp-<pid>-<n>" whose process no longer exists): removed at the
// next successful write, so crashes do not pile them up. A live process's
// (or a reused pid's) are left alone.
void remove_stale_temporaries(const fs::path& path) {
  const std::string prefix = path.filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path.parent_path().empty() ? fs::path(".") : path.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.find_first_not_of("0123456789") != dash || dash > 9) continue;
    const pid_t pid = pid_t(std::stol(rest.substr(0, dash)));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    fs::remove(entry.path(), ec);
  }
}

}  // namespace

WriteResult write_file_atomically(const fs::path& path, const std::function<WriteResult(TemporaryFile&)>& write) {
  const fs::path tmp = temporary_name(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return system_failure("cannot create", tmp, errno);
  TemporaryGuard guard(fd, tmp);
  TemporaryFile file(fd, tmp);
  if (WriteResult r = write(file); !r.ok()) return r;
  if (::fsync(fd) != 0) return system_failure("cannot flush", tmp, errno);
  if (guard.close() != 0) return system_failure("cannot close", tmp, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return system_failure("cannot rename '" + tmp.string() + "' to", path, errno);
  guard.commit();
  remove_stale_temporaries(path);
  return flush_folder(path.parent_path());
}

WriteResult write_file_atomically(const fs::path& path, std::string_view bytes) {
  return write_file_atomically(path, [bytes](TemporaryFile& file) { return file.append(bytes); });
}

}  // namespace onyx::util
