#include "isolate/wire.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace onyx::runtime::isolate {

void Writer::tensor(const Tensor& t) {
  u32(uint32_t(t.dtype()));
  u64(t.shape().size());
  for (int64_t d : t.shape()) u64(uint64_t(d));
  u64(t.bytes());
  raw(t.data(), t.bytes());
}

bool Reader::raw(void* p, size_t n) {
  if (!ok_ || n > left_) return ok_ = false;
  if (n) std::memcpy(p, p_, n);
  p_ += n;
  left_ -= n;
  return true;
}

bool Reader::str(std::string* s) {
  uint64_t n = 0;
  if (!u64(&n) || n > left_) return ok_ = false;
  s->assign(p_, size_t(n));
  p_ += n;
  left_ -= size_t(n);
  return true;
}

bool Reader::status(Status* s) {
  uint32_t code = 0;
  std::string message;
  if (!u32(&code) || !str(&message) || code > uint32_t(ONYX_STATUS_INTERNAL)) return ok_ = false;
  *s = code == 0 ? Status() : Status(OnyxStatusCode(code), std::move(message));
  return true;
}

bool Reader::tensor(Tensor* t) {
  uint32_t dtype = 0;
  uint64_t rank = 0, bytes = 0;
  if (!u32(&dtype) || !u64(&rank) || rank > 64) return ok_ = false;
  Shape shape(static_cast<size_t>(rank));
  for (int64_t& d : shape) {
    uint64_t v = 0;
    if (!u64(&v)) return false;
    d = int64_t(v);
  }
  // Only fixed-size element types: the byte count must match the shape.
  if (dtype_size(int32_t(dtype)) == 0 || !onyx_dtype_name(int32_t(dtype))) return ok_ = false;
  std::optional<size_t> expected = checked_storage_bytes(int32_t(dtype), shape);
  if (!expected || !u64(&bytes) || bytes != *expected || bytes > left_) return ok_ = false;
  *t = Tensor::allocate(int32_t(dtype), std::move(shape));
  return raw(t->data(), size_t(bytes));
}

std::string encode_config(const WorkerConfig& c) {
  Writer w;
  w.str(c.model_path);
  w.str(c.model_bytes);
  w.u64(c.options.providers.size());
  for (const ProviderRequest& p : c.options.providers) {
    w.str(p.name_or_path);
    w.u64(p.options.size());
    for (const auto& [key, value] : p.options) {
      w.str(key);
      w.str(value);
    }
  }
  w.u32(uint32_t(c.options.fallback));
  w.u64(c.options.intra_op_threads);
  w.u32(c.options.allow_reduced_precision ? 1 : 0);
  w.u32(uint32_t(c.options.graph_optimization));
  w.u64(c.options.host_memory_limit);
  w.u64(c.provider_dirs.size());
  for (const std::string& d : c.provider_dirs) w.str(d);
  w.str(c.options.compiled_cache_dir);
  w.u32(uint32_t(c.options.device_policy));
  return std::move(w.bytes());
}

bool decode_config(const std::string& payload, WorkerConfig* c) {
  Reader r(payload.data(), payload.size());
  uint64_t providers = 0, threads = 0, dirs = 0, memory_limit = 0;
  uint32_t fallback = 0, reduced = 0, optimization = 0;
  if (!r.str(&c->model_path) || !r.str(&c->model_bytes) || !r.u64(&providers)) return false;
  for (uint64_t k = 0; k < providers; ++k) {
    ProviderRequest p;
    uint64_t count = 0;
    if (!r.str(&p.name_or_path) || !r.u64(&count)) return false;
    for (uint64_t i = 0; i < count; ++i) {
      std::string key, value;
      if (!r.str(&key) || !r.str(&value)) return false;
      p.options.emplace_back(std::move(key), std::move(value));
    }
    c->options.providers.push_back(std::move(p));
  }
  if (!r.u32(&fallback) || !r.u64(&threads) || !r.u32(&reduced) || !r.u32(&optimization) ||
      !r.u64(&memory_limit) || !r.u64(&dirs))
    return false;
  c->options.fallback = FallbackPolicy(fallback);
  c->options.intra_op_threads = size_t(threads);
  c->options.allow_reduced_precision = reduced != 0;
  c->options.graph_optimization = GraphOptimization(optimization);
  c->options.host_memory_limit = size_t(memory_limit);
  for (uint64_t k = 0; k < dirs; ++k) {
    std::string d;
    if (!r.str(&d)) return false;
    c->provider_dirs.push_back(std::move(d));
  }
  uint32_t policy = 0;
  if (!r.str(&c->options.compiled_cache_dir) || !r.u32(&policy) || policy > uint32_t(DevicePolicy::kFastest))
    return false;
  c->options.device_policy = DevicePolicy(policy);
  return r.at_end();
}

namespace {

// Milliseconds left for poll(): -1 without a deadline, 0 once it has passed.
int poll_ms(Deadline deadline) {
  if (deadline == Deadline::max()) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return int(std::clamp<int64_t>(left.count() + 1, 0, 1 << 30));
}

IoResult wait_for(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, poll_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoResult::kError;
    if (n == 0) return IoResult::kTimedOut;
    return IoResult::kOk;  // readable, writable, or hung up: the next call says which
  }
}

IoResult send_all(int fd, const char* p, size_t n, Deadline deadline) {
  while (n) {
    if (IoResult w = wait_for(fd, POLLOUT, deadline); w != IoResult::kOk) return w;
    ssize_t sent = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (sent < 0) return errno == EPIPE || errno == ECONNRESET ? IoResult::kClosed : IoResult::kError;
    p += sent;
    n -= size_t(sent);
  }
  return IoResult::kOk;
}

IoResult recv_all(int fd, char* p, size_t n, Deadline deadline) {
  while (n) {
    if (IoResult w = wait_for(fd, POLLIN, deadline); w != IoResult::kOk) return w;
    ssize_t got = ::recv(fd, p, n, MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got == 0 || (got < 0 && errno == ECONNRESET)) return IoResult::kClosed;
    if (got < 0) return IoResult::kError;
    p += got;
    n -= size_t(got);
  }
  return IoResult::kOk;
}

}  // namespace

IoResult send_frame(int fd, FrameKind kind, const std::string& payload, Deadline deadline) {
  char header[12];
  const uint32_t k = kind;
  const uint64_t size = payload.size();
  std::memcpy(header, &k, 4);
  std::memcpy(header + 4, &size, 8);
  if (IoResult r = send_all(fd, header, sizeof header, deadline); r != IoResult::kOk) return r;
  return send_all(fd, payload.data(), payload.size(), deadline);
}

IoResult recv_frame(int fd, uint32_t* kind, std::string* payload, Deadline deadline) {
  char header[12];
  if (IoResult r = recv_all(fd, header, sizeof header, deadline); r != IoResult::kOk) return r;
  uint64_t size = 0;
  std::memcpy(kind, header, 4);
  std::memcpy(&size, header + 4, 8);
  if (size > kMaxPayload) return IoResult::kGarbage;
  payload->resize(size_t(size));
  return recv_all(fd, payload->data(), payload->size(), deadline);
}

}  // namespace onyx::runtime::isolate
