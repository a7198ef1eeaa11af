// read_file.cpp: see read_file.h.
#include "onyx/util/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace onyx::util {

std::string read_regular_file(const std::filesystem::path& path, std::string* bytes, int* errno_out) {
  if (errno_out) *errno_out = 0;
  auto failed = [&](const std::string& what, int error) {
    if (errno_out) *errno_out = error;
    return what + " '" + path.string() + "': " + std::error_code(error, std::generic_category()).message();
  };
  // O_NONBLOCK: opening a FIFO must not wait; regular files ignore it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return failed("cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    if (errno_out) *errno_out = EINVAL;
    return "'" + path.string() + "' is not a regular file";
  }
  bytes->resize(size_t(st.st_size));
  size_t done = 0;
  while (done < bytes->size()) {
    ssize_t n = ::read(fd, bytes->data() + done, std::min<size_t>(bytes->size() - done, size_t(1) << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int error = n < 0 ? errno : EIO;
      ::close(fd);
      return n < 0 ? failed("cannot read", error) : "'" + path.string() + "' shrank while it was read";
    }
    done += size_t(n);
  }
  ::close(fd);
  return "";
}

}  // namespace onyx::util
