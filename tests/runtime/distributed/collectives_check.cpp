// collectives_check: every collective of a collectives plugin, checked
// against values each rank can compute alone, in one process per rank:
//
//   mpirun -np 4 onyx_collectives_check mpi
//   onyx_collectives_check loopback
//   onyx_collectives_check mpi --stall-rank 1 --timeout-ms 3000
//   onyx_collectives_check nccl --unavailable-ok   (no GPU: must report UNAVAILABLE)
//   onyx_collectives_check mpi --kill-rank 1      (rank 1 dies: SIGKILL)
//   onyx_collectives_check mpi --busy-rank 1 --timeout-ms 3000
//
// Rank r contributes values that depend on r and the index, so that a
// misplaced block, a missing rank or a wrong reduction shows as a wrong
// element; peer_states must find every rank arrived at a collective all
// have started. Exit 0 when every check passed on this rank.
//
// Failures: with --stall-rank R, rank R stops itself (SIGSTOP) before the
// third all_reduce; the others must time out with an error naming that
// collective and the missing rank, and end the job (exit non-zero) instead
// of hanging. With --kill-rank R it dies there (SIGKILL). With --busy-rank R
// it sleeps there, alive but outside collectives, for 10 timeouts, while
// rank 0 runs one collective ahead (starts steps 3 and 4, waits for 4) and
// the other ranks poll step 3 with test() for 3 timeouts: rank 0's error
// must call R silent and the others late.
#include <onyx_dtype.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "distributed/communicator.h"

using onyx::runtime::Collective;
using onyx::runtime::CollectiveOptions;
using onyx::runtime::Communicator;
using onyx::runtime::PendingCollective;
using onyx::runtime::Status;

namespace {

int g_failures = 0, g_checks = 0;
int g_rank = 0;

void expect(bool ok, const std::string& what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", g_rank, what.c_str());
}

void expect_ok(const Status& st, const std::string& what) {
  expect(st.ok(), what + (st.ok() ? "" : ": " + st.message()));
}

float value(int rank, size_t i) { return float(rank + 1) * 0.5f + float(i % 97); }

void check_all_reduce(Communicator& c, size_t count) {
  const int n = c.size();
  std::vector<float> send(count), recv(count, -1.f);
  for (size_t i = 0; i < count; ++i) send[i] = value(c.rank(), i);
  expect_ok(c.all_reduce(send.data(), recv.data(), count, ONYX_DTYPE_FLOAT32, ONYX_REDUCE_SUM), "all_reduce sum");
  bool same = true;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += value(r, i);  // exact in float: small halves
    same &= recv[i] == float(want);
  }
  expect(same, "all_reduce sum of " + std::to_string(count) + " float32");

  // In place, max over int64.
  std::vector<int64_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = int64_t(i) * 10 + c.rank();
  expect_ok(c.all_reduce(v.data(), v.data(), count, ONYX_DTYPE_INT64, ONYX_REDUCE_MAX), "all_reduce max in place");
  bool max_ok = true;
  for (size_t i = 0; i < count; ++i) max_ok &= v[i] == int64_t(i) * 10 + (n - 1);
  expect(max_ok, "all_reduce max in place of int64");

  double d = c.rank() + 1.0;
  expect_ok(c.all_reduce(&d, &d, 1, ONYX_DTYPE_FLOAT64, ONYX_REDUCE_MIN), "all_reduce min");
  expect(d == 1.0, "all_reduce min of float64");
}

void check_reduce_scatter_all_gather(Communicator& c, size_t count) {
  const int n = c.size(), me = c.rank();
  std::vector<float> send(count * n), mine(count, -1.f);
  for (size_t i = 0; i < send.size(); ++i) send[i] = value(me, i);
  expect_ok(c.reduce_scatter(send.data(), mine.data(), count, ONYX_DTYPE_FLOAT32, ONYX_REDUCE_SUM),
            "reduce_scatter");
  bool rs = true;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += value(r, me * count + i);
    rs &= mine[i] == float(want);
  }
  expect(rs, "reduce_scatter of " + std::to_string(count) + " float32 per rank");

  // all_gather puts the slices back: the result is the all_reduce of send.
  std::vector<float> gathered(count * n, -1.f);
  expect_ok(c.all_gather(mine.data(), gathered.data(), count, ONYX_DTYPE_FLOAT32), "all_gather");
  bool ag = true;
  for (size_t i = 0; i < gathered.size(); ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += value(r, i);
    ag &= gathered[i] == float(want);
  }
  expect(ag, "all_gather of the reduce_scatter slices");

  // 16-bit types move as bytes.
  std::vector<uint16_t> half(3, uint16_t(0x3C00 + me)), halves(3 * n);
  expect_ok(c.all_gather(half.data(), halves.data(), 3, ONYX_DTYPE_FLOAT16), "all_gather float16");
  bool h = true;
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < 3; ++k) h &= halves[r * 3 + k] == uint16_t(0x3C00 + r);
  expect(h, "all_gather of float16 bytes");
}

void check_broadcast_barrier_nonblocking(Communicator& c) {
  const int n = c.size(), me = c.rank();
  std::vector<int32_t> b(5, me == n - 1 ? 42 : -me);
  expect_ok(c.broadcast(b.data(), b.size(), ONYX_DTYPE_INT32, n - 1), "broadcast");
  expect(b == std::vector<int32_t>(5, 42), "broadcast from the last rank");
  expect_ok(c.barrier("check"), "barrier");

  // Two collectives in flight at once, completed in reverse order.
  std::vector<float> a(1000, 1.f), ra(1000), g(1), rg(n);
  g[0] = float(me);
  auto first = c.start_all_reduce(a.data(), ra.data(), a.size(), ONYX_DTYPE_FLOAT32, ONYX_REDUCE_SUM);
  auto second = c.start_all_gather(g.data(), rg.data(), 1, ONYX_DTYPE_FLOAT32);
  expect(first.ok() && second.ok(), "two non-blocking starts");
  if (first.ok() && second.ok()) {
    Status st;
    while (!first.value().test(&st)) {
    }
    expect_ok(st, "test() completes an all_reduce");
    expect_ok(second.value().wait(), "wait() completes an all_gather");
    expect(ra[999] == float(n), "non-blocking all_reduce result");
    bool ok = true;
    for (int r = 0; r < n; ++r) ok &= rg[r] == float(r);
    expect(ok, "non-blocking all_gather result");
  }
}

// Every rank starts a barrier and asks where the others are: all have
// started it. The second barrier keeps every rank waiting (so answering)
// until the last one has its answers.
void check_peer_states(Communicator& c) {
  auto started = c.start_barrier("peer states");
  expect(started.ok(), "start a barrier");
  if (!started.ok()) return;
  auto states = c.peer_states(started.value(), std::chrono::seconds(20));
  // peer_states is optional: NCCL, for one, cannot see where other ranks are.
  const bool unsupported = !states.ok() && states.status().code() == ONYX_STATUS_UNIMPLEMENTED;
  if (unsupported) {
    std::printf("rank %d: peer_states is not offered by %s: %s\n", c.rank(), c.name().c_str(),
                states.status().message().c_str());
  } else if (states.ok()) {
    std::string seen;
    for (int32_t s : states.value()) seen += " " + std::to_string(s);
    expect(states.value() == std::vector<int32_t>(size_t(c.size()), ONYX_PEER_ARRIVED),
           "peer_states: every rank has started the barrier:" + seen);
  } else {
    expect_ok(states.status(), "peer_states");
  }
  expect_ok(started.value().wait(), "the barrier after peer_states");
  expect_ok(c.barrier("after peer states"), "a barrier after peer_states");
  if (unsupported) return;
  auto again = c.peer_states(started.value(), std::chrono::seconds(1));
  expect(again.status().code() == ONYX_STATUS_INVALID_ARGUMENT, "peer_states of a finished collective is refused");
}

// A bfloat16 sum is either right (NCCL reduces bfloat16) or refused as
// UNIMPLEMENTED naming the collective and its label (MPI has no bfloat16).
void check_errors(Communicator& c) {
  uint16_t x = 0x3f80;  // bfloat16 1.0: the sum over ranks is exact up to 256 ranks
  Status st = c.all_reduce(&x, &x, 1, ONYX_DTYPE_BFLOAT16, ONYX_REDUCE_SUM, "step 7");
  if (st.ok()) {
    uint32_t bits = uint32_t(x) << 16;
    float sum = 0;
    std::memcpy(&sum, &bits, sizeof sum);
    expect(sum == float(c.size()), "a bfloat16 all_reduce sums: got " + std::to_string(sum));
  } else {
    expect(st.code() == ONYX_STATUS_UNIMPLEMENTED, "a bfloat16 reduction is refused as unimplemented");
    expect(st.message().find("all_reduce of 1 bfloat16") != std::string::npos &&
               st.message().find("step 7") != std::string::npos,
           "the refusal names the collective and its label: " + st.message());
  }
  Status root = c.broadcast(&x, 1, ONYX_DTYPE_UINT16, c.size());
  expect(root.code() == ONYX_STATUS_INVALID_ARGUMENT, "a broadcast root outside the job is refused");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: onyx_collectives_check PLUGIN [--stall-rank R | --kill-rank R | --busy-rank R] [--timeout-ms T]\n");
    return 2;
  }
  int stall_rank = -1, kill_rank = -1, busy_rank = -1;
  bool unavailable_ok = false;
  CollectiveOptions options;
  for (int k = 2; k < argc; ++k) {
    if (!std::strcmp(argv[k], "--unavailable-ok")) unavailable_ok = true;
    if (k + 1 >= argc) continue;
    if (!std::strcmp(argv[k], "--stall-rank")) stall_rank = std::atoi(argv[k + 1]);
    if (!std::strcmp(argv[k], "--kill-rank")) kill_rank = std::atoi(argv[k + 1]);
    if (!std::strcmp(argv[k], "--busy-rank")) busy_rank = std::atoi(argv[k + 1]);
    if (!std::strcmp(argv[k], "--timeout-ms")) options.timeout = std::chrono::milliseconds(std::atoi(argv[k + 1]));
  }
  auto loaded = Communicator::load(argv[1], {}, options);
  if (!loaded.ok()) {
    const Status& st = loaded.status();
    std::fprintf(stderr, "onyx_collectives_check: %s\n", st.message().c_str());
    // A plugin whose device is absent must say so, with its reason, and
    // nothing else: UNAVAILABLE, naming the plugin file.
    bool reported = st.code() == ONYX_STATUS_UNAVAILABLE && st.message().find("libonyx_collectives_") != std::string::npos;
    if (unavailable_ok && reported) std::printf("%s is unavailable here, as it should say: %s\n", argv[1], st.message().c_str());
    return unavailable_ok && reported ? 0 : 1;
  }
  Communicator& c = *loaded.value();
  g_rank = c.rank();

  if (stall_rank >= 0 || kill_rank >= 0 || busy_rank >= 0) {
    float x = 1.f, y = 1.f;
    for (int step = 1; step <= 3; ++step) {
      if (step == 3 && c.rank() == stall_rank) std::raise(SIGSTOP);
      if (step == 3 && c.rank() == kill_rank) std::raise(SIGKILL);
      if (step == 3 && c.rank() == busy_rank) {
        std::this_thread::sleep_for(c.options().timeout * 10);
        break;
      }
      if (step == 3 && busy_rank >= 0 && c.rank() == 0) {  // one collective ahead
        auto third = c.start_all_reduce(&x, &x, 1, ONYX_DTYPE_FLOAT32, ONYX_REDUCE_SUM, "step 3");
        auto fourth = c.start_all_reduce(&y, &y, 1, ONYX_DTYPE_FLOAT32, ONYX_REDUCE_SUM, "step 4");
        if (!third.ok() || !fourth.ok()) c.abort("cannot start steps 3 and 4");
        Status st = fourth.value().wait();
        if (!st.ok()) c.abort(st.message());
        break;
      }
      if (step == 3 && busy_rank >= 0) {  // polls, answering probes, longer than rank 0 waits
        auto third = c.start_all_reduce(&x, &x, 1, ONYX_DTYPE_FLOAT32, ONYX_REDUCE_SUM, "step 3");
        if (!third.ok()) c.abort(third.status().message());
        const auto until = std::chrono::steady_clock::now() + c.options().timeout * 3;
        Status st;
        while (!third.value().test(&st) && std::chrono::steady_clock::now() < until)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (!st.ok()) c.abort(st.message());
        if (third.value().pending()) c.abort("step 3 was not complete after 3 timeouts");
        break;
      }
      Status st = c.all_reduce(&x, &x, 1, ONYX_DTYPE_FLOAT32, ONYX_REDUCE_SUM, "step " + std::to_string(step));
      if (!st.ok()) c.abort(st.message());
    }
    std::fprintf(stderr, "rank %d: the failed rank went unnoticed\n", c.rank());
    return 1;
  }

  for (size_t count : {size_t(1), size_t(7), size_t(1001), size_t(1 << 16)}) {
    check_all_reduce(c, count);
    check_reduce_scatter_all_gather(c, count);
  }
  check_broadcast_barrier_nonblocking(c);
  check_peer_states(c);
  check_errors(c);

  const auto& counts = c.counters();
  expect(counts.calls_of(Collective::kReduceScatter) == 4 && counts.calls_of(Collective::kBarrier) == 3,
         "the counters count calls: " + counts.to_string());
  std::printf("rank %d of %d (%s): %d checks, %d failed; %s\n", c.rank(), c.size(), c.name().c_str(), g_checks,
              g_failures, counts.to_string().c_str());
  return g_failures ? 1 : 0;
}
