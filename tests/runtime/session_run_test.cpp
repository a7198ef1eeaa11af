// Session::run with caller-provided output buffers (reused across steps).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

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

// bad-inputs.md class 7: an input without a type, or a sequence read by a
// tensor op, was reported as "no provider supports op ..." without the reason.
TEST(SessionCreate, AnInputThatIsNotATypedTensorIsNamed) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  SessionOptions options;
  options.providers.push_back({"cpu", {}});
  auto create = [&](testing::ModelBuilder& model) {
    std::string bytes = model.bytes();
    return Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
  };
  testing::ModelBuilder untyped;
  untyped.input("x", {2}).output("y", {2}).node("Relu", {"x"}, {"y"}, "relu0");
  untyped.proto().mutable_graph()->mutable_input(0)->clear_type();
  auto refused = create(untyped);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(refused.status().message().find("graph 'test' input 'x' declares no element type"), std::string::npos)
      << refused.status().message();

  testing::ModelBuilder sequence;
  sequence.input("x", {2}).output("y", {2}).node("Relu", {"x"}, {"y"}, "relu0");
  auto* type = sequence.proto().mutable_graph()->mutable_input(0)->mutable_type();
  type->clear_tensor_type();
  type->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(1);
  refused = create(sequence);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ONYX_STATUS_UNIMPLEMENTED);
  EXPECT_NE(refused.status().message().find("no provider supports op Relu (node 'relu0'): it reads or writes a "
                                            "sequence, an optional or a string tensor"),
            std::string::npos)
      << refused.status().message();
}

// cancel_runs() from another thread ends a run of slow kernels (50 ms each,
// ten in a chain) within 100 ms of the next kernel boundary: the executor
// checks between steps. Bound: the kernel in flight (<= 50 ms) + 100 ms.
TEST(SessionRun, CancelRunsEndsARunAtTheNextKernelBoundary) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  registry.add_search_dir(ONYX_TEST_PLUGIN_DIR);
  testing::ModelBuilder model;
  model.input("x", {2, 3}).output("y", {2, 3});
  for (int k = 0; k < 10; ++k)
    model.node("Relu", {k == 0 ? "x" : "h" + std::to_string(k - 1)}, {k == 9 ? "y" : "h" + std::to_string(k)},
               "relu" + std::to_string(k));
  const std::string bytes = model.bytes();
  SessionOptions options;
  options.providers = {{"slow_kernel", {}}};
  options.fallback = FallbackPolicy::kFail;
  auto s = Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  using Clock = std::chrono::steady_clock;
  Clock::time_point cancelled_at;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(120));  // inside the third kernel
    cancelled_at = Clock::now();
    (*s)->cancel_runs();
  });
  auto run = (*s)->run({{"x", input(1.0f)}});
  const Clock::time_point ended = Clock::now();
  canceller.join();
  ASSERT_FALSE(run.ok()) << "the run finished before it was cancelled";
  EXPECT_NE(run.status().message().find("run cancelled"), std::string::npos) << run.status().to_string();
  const double ms = std::chrono::duration<double, std::milli>(ended - cancelled_at).count();
  EXPECT_LT(ms, 150.0) << "the run ended " << ms << " ms after cancel_runs";
  // The session stays usable: the next run is not cancelled.
  auto again = (*s)->run({{"x", input(1.0f)}});
  EXPECT_TRUE(again.ok()) << again.status().to_string();
}

// bad-inputs.md class 7: a plugin kernel that returned success without its
// output left the consumer saying only "input 0 ('h') was not produced".
TEST(SessionRun, AKernelThatLeavesItsOutputUnsetIsNamed) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  registry.add_search_dir(ONYX_TEST_PLUGIN_DIR);
  std::string bytes = testing::ModelBuilder()
                          .input("x", {2, 3})
                          .output("y", {2, 3})
                          .node("Relu", {"x"}, {"h"}, "relu0")
                          .node("Neg", {"h"}, {"y"}, "neg0")
                          .bytes();
  SessionOptions options;
  options.providers = {{"lazy_kernel", {}}, {"cpu", {}}};
  options.fallback = FallbackPolicy::kAllow;
  auto s = Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto run = (*s)->run({{"x", input(1.0f)}});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("('h') was not produced; Relu 'relu0' on provider 'lazy_kernel' "
                                        "returned success without writing it"),
            std::string::npos)
      << run.status().to_string();
}

// plugin_handshake fuzzer: device_open or kernel_create succeeding without
// an object had the host pass NULL back to the plugin; a status code the ABI
// does not define was cast to OnyxStatusCode (undefined behaviour). Also a
// plugin writing past the structs it fills.
TEST(SessionRun, APluginThatReturnsNoDeviceNoKernelOrAnUndefinedCodeIsNamed) {
  struct Case {
    const char* lie;
    const char* message;
  } cases[] = {
      {"null_device", "opening a device of provider 'lies': device_open succeeded but returned no device"},
      {"null_kernel", "creating the kernel of Relu 'relu0' on lies: kernel_create succeeded but returned no kernel"},
      {"status_code_1000", "status code 1000 (not an ABI status code): a code of the plugin's own"},
      // Writes past the host's structs (write_guard.h): caught by the guard
      // bytes after them, not left to corrupt the host.
      {"claims_overrun", "capability query of lies: lies wrote past the end of get_capability's 1 node claims"},
      {"output_memory_overrun",
       "lies wrote past the end of kernel_output_memory's entries for Relu 'relu0' (16 bytes handed to it"},
  };
  std::string bytes = testing::ModelBuilder()
                          .input("x", {2, 3})
                          .output("y", {2, 3})
                          .node("Relu", {"x"}, {"y"}, "relu0")
                          .bytes();
  for (const Case& c : cases) {
    ::setenv("ONYX_TEST_LIE", c.lie, 1);
    ProviderRegistry registry;
    registry.add_search_dir(ONYX_PROVIDER_DIR);
    registry.add_search_dir(ONYX_TEST_PLUGIN_DIR);
    SessionOptions options;
    options.providers = {{"lies", {}}, {"cpu", {}}};
    options.fallback = FallbackPolicy::kAllow;
    auto s = Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
    ::unsetenv("ONYX_TEST_LIE");
    ASSERT_FALSE(s.ok()) << c.lie;
    EXPECT_EQ(s.status().code(), ONYX_STATUS_INTERNAL) << c.lie;
    EXPECT_NE(s.status().message().find(c.message), std::string::npos) << s.status().to_string();
  }
}

// bad-inputs.md class 3: Pad with pads [2^40, 0, 0, 0] was accepted, and
// run allocated gigabytes and hung. An output past the machine's memory
// fails before anything is allocated, naming the node.
TEST(SessionRun, AnOutputPastTheMachinesMemoryFailsBeforeAllocating) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  testing::ModelBuilder model;
  model.input("x", {2, 3}).output("y", {-1, 3}).node("Pad", {"x", "pads"}, {"y"}, "pad0");
  auto* pads = model.proto().mutable_graph()->add_initializer();
  pads->set_name("pads");
  pads->set_data_type(7);  // int64
  pads->add_dims(4);
  for (int64_t p : {int64_t(1) << 40, int64_t(0), int64_t(0), int64_t(0)}) pads->add_int64_data(p);
  const std::string bytes = model.bytes();
  SessionOptions options;
  options.providers.push_back({"cpu", {}});
  auto s = Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto run = (*s)->run({{"x", input(1.0f)}});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), ONYX_STATUS_OUT_OF_MEMORY) << run.status().to_string();
  EXPECT_NE(run.status().message().find("Pad 'pad0'"), std::string::npos) << run.status().to_string();
  EXPECT_NE(run.status().message().find("[1099511627778, 3]"), std::string::npos) << run.status().to_string();
}

// The same when the huge value is an intermediate the memory plan places in
// the run's arena: the arena is refused before it is allocated (the model
// run fuzzer found a plan of 950 TB handed to the allocator).
TEST(SessionRun, AnArenaPastTheMachinesMemoryFailsBeforeAllocating) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  testing::ModelBuilder model;
  model.input("x", {2, 3}).output("y", {1, 3}).node("Pad", {"x", "pads"}, {"big"}, "pad0");
  model.node("ReduceSum", {"big", "axes"}, {"y"}, "sum0");
  auto* pads = model.proto().mutable_graph()->add_initializer();
  pads->set_name("pads");
  pads->set_data_type(7);  // int64
  pads->add_dims(4);
  for (int64_t p : {int64_t(1) << 40, int64_t(0), int64_t(0), int64_t(0)}) pads->add_int64_data(p);
  auto* axes = model.proto().mutable_graph()->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(7);
  axes->add_dims(1);
  axes->add_int64_data(0);
  const std::string bytes = model.bytes();
  SessionOptions options;
  options.providers.push_back({"cpu", {}});
  auto s = Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto run = (*s)->run({{"x", input(1.0f)}});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), ONYX_STATUS_OUT_OF_MEMORY) << run.status().to_string();
  EXPECT_NE(run.status().message().find("bytes on cpu, more than this machine's"), std::string::npos)
      << run.status().to_string();
}

// SessionOptions::host_memory_limit bounds what one run may hold: a model
// that is fine on the machine fails against a 1 MiB limit, naming the limit,
// whether the big value is an output sized at run time or planned in the
// arena; runs under the limit still work.
TEST(SessionRun, TheSessionsHostMemoryLimitBoundsOutputsAndArenas) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  auto pads = [](int64_t rows) {
    Tensor t = Tensor::allocate(ONYX_DTYPE_INT64, {4});
    int64_t* p = static_cast<int64_t*>(t.data());
    p[0] = rows, p[1] = p[2] = p[3] = 0;
    return t;
  };
  SessionOptions limited;
  limited.providers.push_back({"cpu", {}});
  limited.host_memory_limit = size_t(1) << 20;
  auto expect_refused = [](const Status& st) {
    EXPECT_EQ(st.code(), ONYX_STATUS_OUT_OF_MEMORY) << st.to_string();
    EXPECT_NE(st.message().find("more than the session's host memory limit of 1048576 bytes"), std::string::npos)
        << st.to_string();
  };
  {  // Pad's output, sized at run time from the pads input.
    testing::ModelBuilder model;
    model.input("x", {2, 3}).input("pads", {4}, 7).output("y", {-1, 3}).node("Pad", {"x", "pads"}, {"y"}, "pad0");
    const std::string bytes = model.bytes();
    auto s = Session::create_from_bytes(registry, bytes.data(), bytes.size(), limited);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    auto small = (*s)->run({{"x", input(1.0f)}, {"pads", pads(1000)}});  // 12 KB
    ASSERT_TRUE(small.ok()) << small.status().to_string();
    auto big = (*s)->run({{"x", input(1.0f)}, {"pads", pads(100000)}});  // 1.2 MB
    ASSERT_FALSE(big.ok());
    expect_refused(big.status());
  }
  {  // The same 1.2 MB as an intermediate the plan places in the arena.
    testing::ModelBuilder model;
    model.input("x", {2, 3}).output("y", {1, 1}).node("Pad", {"x", "pads"}, {"big"}, "pad0");
    model.node("ReduceSum", {"big"}, {"y"}, "sum0");
    auto* p = model.proto().mutable_graph()->add_initializer();
    p->set_name("pads");
    p->set_data_type(7);  // int64
    p->add_dims(4);
    for (int64_t v : {int64_t(100000), int64_t(0), int64_t(0), int64_t(0)}) p->add_int64_data(v);
    const std::string bytes = model.bytes();
    auto s = Session::create_from_bytes(registry, bytes.data(), bytes.size(), limited);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    auto big = (*s)->run({{"x", input(1.0f)}});
    ASSERT_FALSE(big.ok());
    expect_refused(big.status());
    SessionOptions unlimited = limited;
    unlimited.host_memory_limit = 0;  // the machine's memory
    auto u = Session::create_from_bytes(registry, bytes.data(), bytes.size(), unlimited);
    ASSERT_TRUE(u.ok()) << u.status().to_string();
    auto run = (*u)->run({{"x", input(1.0f)}});
    ASSERT_TRUE(run.ok()) << run.status().to_string();
  }
}

// bad-inputs.md class 3: a Loop nested 25 deep with 3 trips each is a valid
// model that runs 3^25 iterations; cancel_runs() stops it from any thread.
TEST(SessionRun, CancelRunsStopsALoopThatWouldRunForYears) {
  namespace pb = ONNX_NAMESPACE;
  // Loop(M, cond, v) whose body is another such loop, three levels deep,
  // each of 10^6 trips: v' = v + 1 at the innermost level.
  auto value = [](pb::ValueInfoProto* v, const std::string& name, int dtype) {
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(dtype);
    v->mutable_type()->mutable_tensor_type()->mutable_shape();
  };
  auto loop_body = [&](const pb::GraphProto* inner, const std::string& name) {
    pb::GraphProto body;
    body.set_name(name);
    value(body.add_input(), name + "_i", 7);
    value(body.add_input(), name + "_c", 9);
    value(body.add_input(), name + "_v", 1);
    auto* keep = body.add_node();
    keep->set_op_type("Identity");
    keep->add_input(name + "_c");
    keep->add_output(name + "_c_out");
    auto* step = body.add_node();
    if (inner) {
      step->set_op_type("Loop");
      step->add_input("trips");
      step->add_input("");
      step->add_input(name + "_v");
      auto* a = step->add_attribute();
      a->set_name("body");
      a->set_type(pb::AttributeProto::GRAPH);
      *a->mutable_g() = *inner;
    } else {
      step->set_op_type("Add");
      step->add_input(name + "_v");
      step->add_input("one");
    }
    step->add_output(name + "_v_out");
    value(body.add_output(), name + "_c_out", 9);
    value(body.add_output(), name + "_v_out", 1);
    return body;
  };
  pb::GraphProto level2 = loop_body(nullptr, "l2");
  pb::GraphProto level1 = loop_body(&level2, "l1");
  pb::GraphProto level0 = loop_body(&level1, "l0");
  testing::ModelBuilder model(17);
  model.input("v", {}).output("w", {}).initializer("one", {}, {1.0f});
  auto* trips = model.proto().mutable_graph()->add_initializer();
  trips->set_name("trips");
  trips->set_data_type(7);
  trips->add_int64_data(1000000);
  auto* loop = model.proto().mutable_graph()->add_node();
  loop->set_op_type("Loop");
  loop->set_name("outer");
  loop->add_input("trips");
  loop->add_input("");
  loop->add_input("v");
  loop->add_output("w");
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(pb::AttributeProto::GRAPH);
  *a->mutable_g() = level0;
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  const std::string bytes = model.bytes();
  SessionOptions options;
  options.providers.push_back({"cpu", {}});
  auto s = Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Tensor v = Tensor::allocate(ONYX_DTYPE_FLOAT32, {});
  v.data_as<float>()[0] = 0;
  std::thread watchdog([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (*s)->cancel_runs();
  });
  const auto start = std::chrono::steady_clock::now();
  auto run = (*s)->run({{"v", v}});
  watchdog.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("run cancelled"), std::string::npos) << run.status().to_string();
  EXPECT_NE(run.status().message().find("Loop 'outer'"), std::string::npos) << run.status().to_string();
  EXPECT_LT(seconds, 5.0);
}

// A kernel's scratch goes back to the session's BlockCache after the call
// and serves the same kernel in the next run: the idle bytes do not grow.
TEST(SessionRun, ScratchIsKeptForTheNextRun) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  // float16 Add widens both inputs and computes its result in float32 scratch.
  std::string bytes = testing::ModelBuilder()
                          .input("x", {1000}, ONYX_DTYPE_FLOAT16)
                          .output("y", {1000}, ONYX_DTYPE_FLOAT16)
                          .node("Add", {"x", "x"}, {"y"}, "add")
                          .bytes();
  auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  SessionOptions options;
  options.providers.push_back({"cpu", {}});
  auto s = Session::create(registry, std::move(model).value(), options);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT16, {1000});
  for (int i = 0; i < 1000; ++i) x.data_as<uint16_t>()[i] = 0x3E00;  // 1.5
  std::vector<size_t> idle;
  for (int run = 0; run < 3; ++run) {
    auto out = s.value()->run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(out.value()[0].data_as<uint16_t>()[999], 0x4200);  // 3.0
    idle.push_back(s.value()->block_cache().idle_bytes(0));
  }
  EXPECT_GE(idle[0], size_t(3 * 4000));  // both inputs and the result widened
  EXPECT_EQ(idle[1], idle[0]);
  EXPECT_EQ(idle[2], idle[0]);
}

TEST(BlockCache, ReusesABlockUpToTwiceTheRequestAndKeepsABoundedAmountIdle) {
  ProviderRegistry registry;
  auto s = relu_neg_session(registry);
  BlockCache cache(s->devices());
  void* block = nullptr;
  ASSERT_TRUE(cache.take(0, 1000, &block).ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u);
  cache.give_back(0, block);
  EXPECT_EQ(cache.idle_bytes(0), 1000u);
  void* small = nullptr;
  ASSERT_TRUE(cache.take(0, 400, &small).ok());  // under half: a block of its own
  EXPECT_NE(small, block);
  void* again = nullptr;
  ASSERT_TRUE(cache.take(0, 600, &again).ok());
  EXPECT_EQ(again, block);
  EXPECT_EQ(cache.idle_bytes(0), 0u);
  cache.give_back(0, again);
  cache.give_back(0, small);
  EXPECT_EQ(cache.idle_bytes(0), 1400u);

  const size_t quarter = BlockCache::kMaxIdleBytes / 4;
  std::vector<void*> blocks(6);
  for (void*& b : blocks) ASSERT_TRUE(cache.take(0, quarter, &b).ok());
  for (void* b : blocks) cache.give_back(0, b);
  EXPECT_LE(cache.idle_bytes(0), BlockCache::kMaxIdleBytes);
  EXPECT_GE(cache.idle_bytes(0), 3 * quarter);  // three of six kept beside the small ones
}

}  // namespace
}  // namespace onyx::runtime
