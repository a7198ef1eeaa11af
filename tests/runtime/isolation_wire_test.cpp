// The out-of-process mode's wire format (runtime/isolate/wire.h) against
// untrusted bytes: every truncation of a valid message is refused, a frame
// length beyond kMaxPayload is garbage, and a peer that closes mid-frame is
// kClosed, not a wait.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "isolate/wire.h"

namespace onyx::runtime::isolate {
namespace {

std::string result_with_one_tensor() {
  Writer w;
  w.status(Status());
  w.u64(1);
  Tensor t = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 3});
  for (int k = 0; k < 6; ++k) t.data_as<float>()[k] = float(k);
  w.tensor(t);
  return std::move(w.bytes());
}

bool decodes(const std::string& bytes) {
  Reader r(bytes.data(), bytes.size());
  Status s;
  uint64_t count = 0;
  Tensor t;
  return r.status(&s) && r.u64(&count) && count == 1 && r.tensor(&t) && r.at_end();
}

TEST(IsolationWire, EveryTruncationIsRefused) {
  const std::string whole = result_with_one_tensor();
  ASSERT_TRUE(decodes(whole));
  for (size_t n = 0; n < whole.size(); ++n) EXPECT_FALSE(decodes(whole.substr(0, n))) << n;
  EXPECT_FALSE(decodes(whole + "x"));
}

TEST(IsolationWire, ATensorWhoseBytesDoNotMatchItsShapeIsRefused) {
  std::string bytes = result_with_one_tensor();
  // The dims follow status (4 + 8), count (8), dtype (4) and rank (8).
  const uint64_t huge = uint64_t(1) << 40;
  std::memcpy(bytes.data() + 4 + 8 + 8 + 4 + 8, &huge, sizeof huge);
  EXPECT_FALSE(decodes(bytes));
}

TEST(IsolationWire, FrameLengthsBeyondTheLimitAndEarlyCloseAreErrors) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  char header[12];
  const uint32_t kind = kResult;
  const uint64_t length = kMaxPayload + 1;
  std::memcpy(header, &kind, 4);
  std::memcpy(header + 4, &length, 8);
  ASSERT_EQ(::write(sv[1], header, sizeof header), ssize_t(sizeof header));
  uint32_t got_kind = 0;
  std::string payload;
  const Deadline soon = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  EXPECT_EQ(recv_frame(sv[0], &got_kind, &payload, soon), IoResult::kGarbage);
  // A header promising 64 bytes, then 3 and the end of the stream.
  const uint64_t short_length = 64;
  std::memcpy(header + 4, &short_length, 8);
  ASSERT_EQ(::write(sv[1], header, sizeof header), ssize_t(sizeof header));
  ASSERT_EQ(::write(sv[1], "abc", 3), 3);
  ::close(sv[1]);
  EXPECT_EQ(recv_frame(sv[0], &got_kind, &payload, soon), IoResult::kClosed);
  ::close(sv[0]);
}

TEST(IsolationWire, ASilentPeerTimesOut) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  uint32_t kind = 0;
  std::string payload;
  const Deadline soon = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  EXPECT_EQ(recv_frame(sv[0], &kind, &payload, soon), IoResult::kTimedOut);
  ::close(sv[0]);
  ::close(sv[1]);
}

}  // namespace
}  // namespace onyx::runtime::isolate
