// crc32c.cpp: CRC32C (Castagnoli polynomial, reflected 0x82F63B78), the
// checksum of every tensor, the header and the table of contents. Uses the
// SSE4.2 crc32 instruction when the running CPU has it (chosen at run time,
// never by the build machine), a table otherwise; both give the same value.
#include <array>
#include <cstring>

#include "crc32c.h"
#include "onyx/checkpoint.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace onyx::checkpoint {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

uint32_t crc_table(const unsigned char* p, size_t n, uint32_t state) {
  for (size_t i = 0; i < n; ++i) state = kTable[(state ^ p[i]) & 0xFF] ^ (state >> 8);
  return state;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc_sse42(const unsigned char* p, size_t n, uint32_t state) {
  uint64_t c = state;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = uint32_t(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool cpu_has_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  uint32_t state = ~crc;
#if defined(__x86_64__)
  if (cpu_has_sse42()) return ~crc_sse42(p, bytes.size(), state);
#endif
  return ~crc_table(p, bytes.size(), state);
}

uint32_t crc32c_portable(std::span<const std::byte> bytes, uint32_t crc) {
  return ~crc_table(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), ~crc);
}

}  // namespace onyx::checkpoint
