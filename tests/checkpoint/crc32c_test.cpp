// crc32c_test.cpp: the checksum against the standard check value and a
// bit-by-bit reference, for the hardware and the portable paths, at every
// length and alignment a tensor can have, and chained over chunks.
#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "crc32c.h"
#include "onyx/checkpoint.h"

namespace onyx::checkpoint {
namespace {

uint32_t reference_crc32c(const unsigned char* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::span<const std::byte> bytes_of(std::string_view s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

TEST(Crc32c, StandardCheckValue) {
  EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c_portable(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
}

TEST(Crc32c, MatchesTheBitwiseReferenceAtEveryLengthAndAlignment) {
  std::vector<unsigned char> data(300);
  for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<unsigned char>(k * 131 + 7);
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t n = 0; offset + n <= data.size(); n += (n < 40 ? 1 : 13)) {
      std::span<const std::byte> s(reinterpret_cast<const std::byte*>(data.data() + offset), n);
      uint32_t expected = reference_crc32c(data.data() + offset, n);
      ASSERT_EQ(crc32c(s), expected) << "offset " << offset << " length " << n;
      ASSERT_EQ(crc32c_portable(s), expected) << "offset " << offset << " length " << n;
    }
  }
}

TEST(Crc32c, ChainsOverChunks) {
  std::vector<std::byte> data(1000);
  for (size_t k = 0; k < data.size(); ++k) data[k] = std::byte(k * 37);
  std::span<const std::byte> all(data);
  for (size_t cut : {0u, 1u, 7u, 8u, 500u, 999u, 1000u}) {
    EXPECT_EQ(crc32c(all.subspan(cut), crc32c(all.first(cut))), crc32c(all)) << cut;
    EXPECT_EQ(crc32c_portable(all.subspan(cut), crc32c_portable(all.first(cut))), crc32c(all)) << cut;
  }
}

}  // namespace
}  // namespace onyx::checkpoint
