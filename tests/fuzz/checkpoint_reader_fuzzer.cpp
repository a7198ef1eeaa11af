// checkpoint_reader_fuzzer.cpp: libFuzzer harness for the checkpoint reader:
// header, table of contents, tensor records, slices, optimizer state and
// properties, with every checksum verified, as `onyx checkpoint inspect`
// loads a file. Any input must give a checkpoint or an error.
#include <cstddef>
#include <cstdint>
#include <span>

#include "onyx/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto loaded = onyx::checkpoint::load_from_memory(bytes, /*verify_data=*/true);
  if (loaded.ok()) {
    // What loaded must also pass the checks save() makes.
    if (!onyx::checkpoint::validate(*loaded).ok()) __builtin_trap();
  } else if (loaded.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
