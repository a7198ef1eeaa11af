// make_test_models.cpp: `onyx_make_test_models DIR [--seed N]` writes the test
// models (test_models.h) into DIR.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "test_models.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: onyx_make_test_models DIR [--seed N]\n"
                         "writes mlp.onnx, cnn.onnx and small models for error tests into DIR\n");
    return argc < 2 ? 1 : 0;
  }
  uint64_t seed = onyx::test_models::kDefaultSeed;
  if (argc == 4 && std::string(argv[2]) == "--seed") {
    char* end = nullptr;
    seed = std::strtoull(argv[3], &end, 10);
    if (!end || *end) {
      std::fprintf(stderr, "onyx_make_test_models: --seed expects an integer, got '%s'\n", argv[3]);
      return 1;
    }
  } else if (argc != 2) {
    std::fprintf(stderr, "onyx_make_test_models: unexpected arguments (usage: DIR [--seed N])\n");
    return 1;
  }
  try {
    for (const std::string& name : onyx::test_models::write_all_models(argv[1], seed))
      std::printf("wrote %s/%s\n", argv[1], name.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx_make_test_models: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
