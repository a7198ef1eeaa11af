// wire.h: the parent <-> worker protocol of the out-of-process mode.
// Frames over one AF_UNIX stream socket: u32 kind, u64 payload length, then
// the payload (host byte order: both ends are the same build on one machine).
// Payloads are built with Writer and parsed with Reader, which checks every
// length against what is left, so a worker that sends garbage yields an
// error, never an out-of-bounds read or a huge allocation.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "session/session.h"

namespace onyx::runtime::isolate {

enum FrameKind : uint32_t {
  kConfig = 1,   // parent -> worker: model and session options
  kReady = 2,    // worker -> parent: a status (session created or why not)
  kRun = 3,      // parent -> worker: named input tensors, output names
  kResult = 4,   // worker -> parent: a status, then the output tensors
};

// The largest payload accepted: a length above it is garbage, not a tensor.
constexpr uint64_t kMaxPayload = uint64_t(1) << 36;

class Writer {
 public:
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(const std::string& s) { u64(s.size()); raw(s.data(), s.size()); }
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  void status(const Status& s) { u32(uint32_t(s.code())); str(s.message()); }
  void tensor(const Tensor& t);
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// Every getter fails (returns false, and keeps failing) when the payload is
// shorter than what it asks for.
class Reader {
 public:
  Reader(const char* data, size_t size) : p_(data), left_(size) {}
  bool u32(uint32_t* v) { return raw(v, sizeof *v); }
  bool u64(uint64_t* v) { return raw(v, sizeof *v); }
  bool f64(double* v) { return raw(v, sizeof *v); }
  bool str(std::string* s);
  bool raw(void* p, size_t n);
  bool status(Status* s);
  // A host tensor of a fixed-size dtype (strings are refused).
  bool tensor(Tensor* t);
  bool at_end() const { return ok_ && left_ == 0; }

 private:
  const char* p_;
  size_t left_;
  bool ok_ = true;
};

// The session options and the model, as the worker needs them to build the
// same session. Exactly one of model_path and model_bytes is set.
struct WorkerConfig {
  std::string model_path;
  std::string model_bytes;
  SessionOptions options;
  std::vector<std::string> provider_dirs;  // the registry's extra folders
};
std::string encode_config(const WorkerConfig& config);
bool decode_config(const std::string& payload, WorkerConfig* config);

using Deadline = std::chrono::steady_clock::time_point;  // max(): none
enum class IoResult { kOk, kClosed, kTimedOut, kGarbage, kError };

// Blocking (or, with a deadline, polling) whole-frame I/O. Writes never raise
// SIGPIPE. A length above kMaxPayload is kGarbage.
IoResult send_frame(int fd, FrameKind kind, const std::string& payload, Deadline deadline);
IoResult recv_frame(int fd, uint32_t* kind, std::string* payload, Deadline deadline);

}  // namespace onyx::runtime::isolate
