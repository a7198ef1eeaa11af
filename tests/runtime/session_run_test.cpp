// Session::run with caller-provided output buffers (reused across steps).
#include <gtest/gtest.h>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

// x -> Relu -> y, and x -> Neg -> z.
std::unique_ptr<Session> relu_neg_session(ProviderRegistry& registry) {
  std::string bytes = testing::ModelBuilder()
                          .input("x", {2, 3})
                          .output("y", {2, 3})
                          .output("z", {2, 3})
                          .node("Relu", {"x"}, {"y"}, "relu0")
                          .node("Neg", {"x"}, {"z"}, "neg0")
                          .bytes();
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  SessionOptions options;
  options.providers.push_back({"cpu", {}});
  auto s = Session::create(registry, std::move(model).value(), options);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(s).value();
}

Tensor input(float sign) {
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = sign * float(i - 2);
  return x;
}

TEST(SessionRun, WritesOutputsIntoReusedBuffers) {
  ProviderRegistry registry;
  auto s = relu_neg_session(registry);
  Tensor y_buffer = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 3});
  std::vector<Tensor> reuse = {y_buffer, Tensor()};  // reuse y's, not z's
  for (float sign : {1.f, -1.f}) {
    auto out = s->run({{"x", input(sign)}}, {}, &reuse);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(out.value()[0].data(), y_buffer.data());
    EXPECT_NE(out.value()[1].data(), y_buffer.data());
    for (int i = 0; i < 6; ++i) {
      float x = sign * float(i - 2);
      EXPECT_EQ(y_buffer.data_as<float>()[i], std::max(x, 0.f));
      EXPECT_EQ(out.value()[1].data_as<float>()[i], -x);
    }
  }
}

TEST(SessionRun, MismatchedReuseBufferIsIgnoredOrRefused) {
  ProviderRegistry registry;
  auto s = relu_neg_session(registry);
  Tensor wrong_shape = Tensor::allocate(ONYX_DTYPE_FLOAT32, {6});
  std::vector<Tensor> reuse = {wrong_shape, Tensor()};
  auto out = s->run({{"x", input(1)}}, {}, &reuse);  // a fresh buffer instead
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_NE(out.value()[0].data(), wrong_shape.data());
  std::vector<Tensor> too_few = {Tensor()};
  auto refused = s->run({{"x", input(1)}}, {}, &too_few);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("output buffers"), std::string::npos);
}

}  // namespace
}  // namespace onyx::runtime
