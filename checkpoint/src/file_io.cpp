// file_io.cpp: POSIX file handling for checkpoints (read, mmap); atomic
// replacement is util's (onyx/util/atomic_file.h).
#include "file_io.h"

#include <onyx/util/atomic_file.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

// Linux moves at most ~2 GiB per read call; loop in chunks.
constexpr size_t kMaxIo = size_t(1) << 30;

Status io_error(const util::WriteResult& failure) {
  OnyxStatusCode code = failure.system_error() == ENOENT ? ONYX_STATUS_NOT_FOUND : ONYX_STATUS_UNAVAILABLE;
  return Status(code, failure.message());
}

// The writer's sink on util's temporary file.
class FileSink : public Sink {
 public:
  explicit FileSink(util::TemporaryFile& file) : file_(file) {}
  Status append(std::span<const std::byte> bytes) override { return status_of(file_.append(bytes)); }
  Status write_at(uint64_t offset, std::span<const std::byte> bytes) override {
    return status_of(file_.write_at(offset, bytes));
  }

 private:
  static Status status_of(const util::WriteResult& r) { return r.ok() ? Status() : io_error(r); }
  util::TemporaryFile& file_;
};

// A regular file opened for reading, and its size; the caller closes fd.
struct OpenFile {
  int fd = -1;
  size_t size = 0;
};

StatusOr<OpenFile> open_regular_file(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO's open would otherwise wait forever for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return io_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("'" + path.string() + "' is not a regular file");
  }
  return OpenFile{fd, size_t(st.st_size)};
}

std::shared_ptr<void> aligned_buffer(size_t size) {
  void* p = std::aligned_alloc(64, std::max<size_t>(64, (size + 63) / 64 * 64));
  if (!p) throw std::bad_alloc();
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace

Status replace_file_atomically(const std::filesystem::path& path, const std::function<Status(Sink&)>& write) {
  Status written;  // what `write` said, kept with its code
  util::WriteResult result = util::write_file_atomically(path, [&](util::TemporaryFile& file) {
    FileSink sink(file);
    written = write(sink);
    return written.ok() ? util::WriteResult() : util::WriteResult::failure(written.message());
  });
  if (!written.ok()) return written;
  return result.ok() ? Status() : io_error(result);
}

StatusOr<FileBytes> read_file(const std::filesystem::path& path) {
  ONYX_ASSIGN_OR_RETURN(OpenFile file, open_regular_file(path));
  const int fd = file.fd;
  FileBytes bytes;
  bytes.size = file.size;
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
  ONYX_ASSIGN_OR_RETURN(OpenFile file, open_regular_file(path));
  const int fd = file.fd;
  FileBytes bytes;
  bytes.size = file.size;
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
