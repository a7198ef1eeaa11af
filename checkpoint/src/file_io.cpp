// file_io.cpp: POSIX file handling for checkpoints (atomic replace, read, mmap).
#include "file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <system_error>

namespace onyx::checkpoint {
namespace {

std::string errno_text(int error) { return std::error_code(error, std::generic_category()).message(); }

Status io_error(const std::string& what, const std::filesystem::path& path, int error) {
  OnyxStatusCode code = error == ENOENT ? ONYX_STATUS_NOT_FOUND : ONYX_STATUS_UNAVAILABLE;
  return Status(code, what + " '" + path.string() + "': " + errno_text(error));
}

// Linux moves at most ~2 GiB per read/write call; loop in chunks.
constexpr size_t kMaxIo = size_t(1) << 30;

class FileSink : public Sink {
 public:
  FileSink(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  Status append(std::span<const std::byte> bytes) override {
    while (!bytes.empty()) {
      ssize_t n = ::write(fd_, bytes.data(), std::min(bytes.size(), kMaxIo));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return io_error("cannot write", path_, errno);
      bytes = bytes.subspan(size_t(n));
    }
    return {};
  }
  Status write_at(uint64_t offset, std::span<const std::byte> bytes) override {
    while (!bytes.empty()) {
      ssize_t n = ::pwrite(fd_, bytes.data(), std::min(bytes.size(), kMaxIo), off_t(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return io_error("cannot write", path_, errno);
      bytes = bytes.subspan(size_t(n));
      offset += uint64_t(n);
    }
    return {};
  }

 private:
  int fd_;
  std::filesystem::path path_;
};

Status fsync_folder(const std::filesystem::path& folder) {
  int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open folder", folder, errno);
  int rc = ::fsync(fd);
  int error = errno;
  ::close(fd);
  if (rc != 0) return io_error("cannot flush folder", folder, error);
  return {};
}

std::filesystem::path temporary_name(const std::filesystem::path& path) {
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  return tmp;
}

std::shared_ptr<void> aligned_buffer(size_t size) {
  void* p = std::aligned_alloc(64, std::max<size_t>(64, (size + 63) / 64 * 64));
  if (!p) throw std::bad_alloc();
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace

Status replace_file_atomically(const std::filesystem::path& path, const std::function<Status(Sink&)>& write) {
  std::filesystem::path tmp = temporary_name(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create", tmp, errno);
  FileSink sink(fd, tmp);
  Status status = write(sink);
  if (status.ok() && ::fsync(fd) != 0) status = io_error("cannot flush", tmp, errno);
  if (::close(fd) != 0 && status.ok()) status = io_error("cannot close", tmp, errno);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    status = io_error("cannot rename '" + tmp.string() + "' to", path, errno);
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  return fsync_folder(path.parent_path());
}

StatusOr<FileBytes> read_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("'" + path.string() + "' is not a regular file");
  }
  FileBytes bytes;
  bytes.size = size_t(st.st_size);
  bytes.owner = aligned_buffer(bytes.size);
  bytes.data = static_cast<std::byte*>(bytes.owner.get());
  size_t done = 0;
  while (done < bytes.size) {
    ssize_t n = ::read(fd, bytes.data + done, std::min(bytes.size - done, kMaxIo));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int error = n < 0 ? errno : EIO;
      ::close(fd);
      return io_error("cannot read", path, error);
    }
    done += size_t(n);
  }
  ::close(fd);
  return bytes;
}

StatusOr<FileBytes> map_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("'" + path.string() + "' is not a regular file");
  }
  FileBytes bytes;
  bytes.size = size_t(st.st_size);
  if (bytes.size == 0) {  // mmap refuses empty files; the reader reports truncation
    ::close(fd);
    bytes.owner = aligned_buffer(0);
    bytes.data = static_cast<std::byte*>(bytes.owner.get());
    return bytes;
  }
  void* p = ::mmap(nullptr, bytes.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int error = errno;
  ::close(fd);  // the mapping keeps the file open
  if (p == MAP_FAILED) return io_error("cannot map", path, error);
  size_t size = bytes.size;
  bytes.owner = std::shared_ptr<void>(p, [size](void* q) { ::munmap(q, size); });
  bytes.data = static_cast<std::byte*>(p);
  return bytes;
}

FileBytes copy_bytes(std::span<const std::byte> in) {
  FileBytes bytes;
  bytes.size = in.size();
  bytes.owner = aligned_buffer(in.size());
  bytes.data = static_cast<std::byte*>(bytes.owner.get());
  if (!in.empty()) std::memcpy(bytes.data, in.data(), in.size());
  return bytes;
}

}  // namespace onyx::checkpoint
