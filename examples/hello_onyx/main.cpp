// hello_onyx MODEL: runs a model once with zero-filled inputs on the CPU
// provider and prints each output's shape.
#include <onyx/onyx.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hello_onyx MODEL.onnx\n");
    return 2;
  }
  try {
    onyx::Env env;
    env.add_provider_dir(ONYX_PROVIDER_DIR);
    onyx::Session session(env, argv[1], onyx::SessionOptions().provider("cpu"));
    std::vector<onyx::Tensor> inputs;
    std::vector<std::pair<std::string, const onyx::Tensor*>> named;
    auto metadata = session.inputs();
    inputs.reserve(metadata.size());
    for (const auto& m : metadata) {
      std::vector<int64_t> dims = m.dims;
      for (int64_t& d : dims) d = d < 0 ? 1 : d;  // symbolic dims: 1
      inputs.push_back(onyx::Tensor::zeros(m.dtype, dims));
      named.emplace_back(m.name, &inputs.back());
    }
    auto outputs = session.run(named);
    auto out_meta = session.outputs();
    for (size_t k = 0; k < outputs.size(); ++k) {
      std::printf("%s:", out_meta[k].name.c_str());
      for (int64_t d : outputs[k].shape()) std::printf(" %lld", static_cast<long long>(d));
      std::printf("\n");
    }
  } catch (const onyx::Error& e) {
    std::fprintf(stderr, "hello_onyx: %s\n", e.what());
    return 1;
  }
  return 0;
}
