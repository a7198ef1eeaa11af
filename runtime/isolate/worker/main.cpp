// onyx-worker: the child of the out-of-process mode (isolate/worker_process.h).
// fd 3: a stream socket to the parent; fd 4: the StepRecord memfd. It reads a
// kConfig frame, creates the session and answers kReady, then answers each
// kRun frame with a kResult frame until the parent closes the socket. Before
// every step the executor calls publish_step, so that when a provider's kernel
// crashes or hangs here the parent can name it.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

#include "isolate/step_record.h"
#include "isolate/wire.h"
#include "session/session.h"
#include "core/step_observer.h"

namespace {

using namespace onyx::runtime;
using namespace onyx::runtime::isolate;

constexpr int kSocketFd = 3;
constexpr int kRecordFd = 4;
StepRecord* g_record = nullptr;

void publish_step(const char* provider, const char* step) {
  copy_field(g_record->provider, sizeof g_record->provider, provider);
  copy_field(g_record->step, sizeof g_record->step, step);
}

std::string run_reply(Session& session, const std::string& payload) {
  Reader reader(payload.data(), payload.size());
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::vector<std::string> names;
  uint64_t count = 0;
  Status status;
  bool ok = reader.u64(&count) && count <= payload.size();
  for (uint64_t k = 0; ok && k < count; ++k) {
    std::pair<std::string, Tensor> input;
    ok = reader.str(&input.first) && reader.tensor(&input.second);
    inputs.push_back(std::move(input));
  }
  ok = ok && reader.u64(&count) && count <= payload.size();
  for (uint64_t k = 0; ok && k < count; ++k) {
    names.emplace_back();
    ok = reader.str(&names.back());
  }
  Writer reply;
  if (!ok || !reader.at_end()) {
    reply.status(internal_error("onyx-worker: malformed run request"));
    return std::move(reply.bytes());
  }
  StatusOr<std::vector<Tensor>> outputs = session.run(inputs, names);
  g_record->step[0] = '\0';  // between runs: a later death is not this node's
  reply.status(outputs.status());
  if (outputs.ok()) {
    reply.u64(outputs.value().size());
    for (const Tensor& t : outputs.value()) reply.tensor(t);
  }
  return std::move(reply.bytes());
}

}  // namespace

int main() {
  void* mapped = ::mmap(nullptr, sizeof(StepRecord), PROT_READ | PROT_WRITE, MAP_SHARED, kRecordFd, 0);
  if (mapped == MAP_FAILED) {
    std::fprintf(stderr, "onyx-worker: not started by an Onyx session (no step record on fd 4)\n");
    return 2;
  }
  ::close(kRecordFd);
  g_record = static_cast<StepRecord*>(mapped);
  set_step_observer(publish_step);

  const Deadline forever = Deadline::max();
  uint32_t kind = 0;
  std::string payload;
  if (recv_frame(kSocketFd, &kind, &payload, forever) != IoResult::kOk || kind != kConfig) return 2;
  WorkerConfig config;
  Writer ready;
  ProviderRegistry registry;  // declared first: outlives the session
  std::unique_ptr<Session> session;
  if (!decode_config(payload, &config)) {
    ready.status(internal_error("onyx-worker: malformed configuration"));
  } else {
    for (const std::string& dir : config.provider_dirs) registry.add_search_dir(dir);
    auto created = config.model_path.empty()
                       ? Session::create_from_bytes(registry, config.model_bytes.data(), config.model_bytes.size(),
                                                    config.options)
                       : Session::create_from_file(registry, config.model_path, config.options);
    ready.status(created.status());
    if (created.ok()) session = std::move(created).value();
  }
  if (send_frame(kSocketFd, kReady, ready.bytes(), forever) != IoResult::kOk || !session) return 0;

  while (recv_frame(kSocketFd, &kind, &payload, forever) == IoResult::kOk) {
    if (kind != kRun) return 2;
    if (send_frame(kSocketFd, kResult, run_reply(*session, payload), forever) != IoResult::kOk) return 0;
  }
  return 0;  // the parent closed the socket: the session is done
}
