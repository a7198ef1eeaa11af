// onyx_onednn_verbose_probe: runs the CNN blocks of cnn_blocks.h on the
// oneDNN provider (CPU fallback) a few times, prints ONYX_STEADY_STATE, and
// runs them again. Run with ONEDNN_VERBOSE=1, its stdout shows which oneDNN
// implementations run in steady state (blocked_group_test.cpp reads it).
#include <cstdio>
#include <exception>

#include "cnn_blocks.h"
#include "onednn_test_util.h"

int main() {
  using namespace onyx::onednn_test;
  try {
    onyx::Env env;
    onyx::Session residual = make_session(env, build_residual_cnn(1), onednn_then_cpu());
    onyx::Session inverted = make_session(env, build_inverted_residual(2), onednn_then_cpu());
    onyx::Tensor x1 = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {4, 3, 32, 32}, random_floats(4 * 3 * 32 * 32, 3));
    onyx::Tensor x2 = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {4, 8, 16, 16}, random_floats(4 * 8 * 16 * 16, 4));
    auto run_both = [&] {
      residual.run({{"x", &x1}});
      inverted.run({{"x", &x2}});
    };
    for (int k = 0; k < 2; ++k) run_both();
    std::printf("ONYX_STEADY_STATE\n");
    std::fflush(stdout);
    for (int k = 0; k < 3; ++k) run_both();
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx_onednn_verbose_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
