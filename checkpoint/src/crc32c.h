// crc32c.h: the portable CRC32C, exposed so tests can check it against the
// hardware path (crc32c() in onyx/checkpoint.h picks one at run time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace onyx::checkpoint {

uint32_t crc32c_portable(std::span<const std::byte> bytes, uint32_t crc = 0);

}  // namespace onyx::checkpoint
