// sdk_test.cpp: the plugin SDK on its own, through the ABI table it
// generates: kernel definitions and their decline reasons, a factory's
// failure reaching the host, constants borrowed during get_capability, the
// host table kept per plugin (two hosts driving one provider at once), the
// calling host on the pool's threads, and create's argument checks.
#include <onyx/plugin_sdk.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace sdk = onyx::sdk;

namespace {

// ---- two fake hosts whose statuses say which host made them ---------------

struct FakeStatus {
  char host;
  int32_t code;
  std::string message;
};
FakeStatus* as_fake(OnyxStatus* s) { return reinterpret_cast<FakeStatus*>(s); }

template <char Id>
OnyxStatus* create_status(int32_t code, const char* message) {
  return code == ONYX_STATUS_OK ? nullptr : reinterpret_cast<OnyxStatus*>(new FakeStatus{Id, code, message});
}

// ctx_parallel_for runs the body on another thread, as a pool would.
void parallel_for_on_thread(OnyxComputeContext*, size_t n, size_t, OnyxParallelBody body, void* user) {
  std::thread([&] { body(user, 0, n); }).join();
}

template <char Id>
OnyxHostApi make_host() {
  OnyxHostApi h{};
  h.struct_size = sizeof h;
  h.abi_version = ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR);
  h.status_create = create_status<Id>;
  h.status_release = [](OnyxStatus* s) { delete as_fake(s); };
  h.status_code = [](const OnyxStatus* s) { return reinterpret_cast<const FakeStatus*>(s)->code; };
  h.status_message = [](const OnyxStatus* s) { return reinterpret_cast<const FakeStatus*>(s)->message.c_str(); };
  h.log = [](int32_t, const char*) {};
  h.ctx_thread_count = [](const OnyxComputeContext*) -> size_t { return 2; };
  h.ctx_parallel_for = parallel_for_on_thread;
  return h;
}
const OnyxHostApi kHostA = make_host<'A'>();
const OnyxHostApi kHostB = make_host<'B'>();

// ---- a provider built on the SDK ------------------------------------------

class NoopKernel : public sdk::Kernel {
 public:
  explicit NoopKernel(const sdk::NodeInfo&) {}
  OnyxStatus* compute(sdk::ComputeContext&) override { return nullptr; }
};

// Checks that parallel_for bodies see the kernel's host as the calling host.
class CallingHostKernel : public sdk::Kernel {
 public:
  explicit CallingHostKernel(const sdk::NodeInfo&) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    std::atomic<const OnyxHostApi*> seen{nullptr};
    ctx.parallel_for(100, 1, [&](size_t, size_t) { seen = sdk::calling_host_or_null(); });
    return seen.load() == &ctx.host() ? nullptr : sdk::make_status(ONYX_STATUS_INTERNAL, "wrong calling host");
  }
};

// Reads input 1 without declaring .inputs(2): a node with one input must
// meet an error, not a read past the node's inputs.
class ReadsSecondInputKernel : public sdk::Kernel {
 public:
  explicit ReadsSecondInputKernel(const sdk::NodeInfo& n) : rank_(n.inputs[1].rank) {}
  OnyxStatus* compute(sdk::ComputeContext&) override { return nullptr; }

 private:
  int32_t rank_;
};

// Remembers whether get_capability saw borrowed constants.
std::atomic<int> borrowed_seen{0}, copied_seen{0};

class TestProvider : public sdk::HostMemory {
 public:
  TestProvider() {
    registry_.add(sdk::KernelDefBuilder("Add")
                      .since(7)
                      .inputs(2)
                      .type_constraint("T", {0, 1}, sdk::dtypes::kFloat)
                      .check([](const sdk::NodeInfo& n) {
                        if (n.inputs[1].constant) ++(n.inputs[1].constant->bytes.borrowed() ? borrowed_seen : copied_seen);
                        return std::string();
                      })
                      .create<NoopKernel>());
    registry_.add(sdk::KernelDefBuilder("Fail").create([](const sdk::NodeInfo& n) -> sdk::KernelResult {
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Fail node '%s': refused", n.name.c_str());
    }));
    registry_.add(sdk::KernelDefBuilder("Probe").create<CallingHostKernel>());
    registry_.add(sdk::KernelDefBuilder("ReadsSecond").create<ReadsSecondInputKernel>());
  }
  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t) const { return host_device("test", "Onyx"); }
  const sdk::KernelRegistry& registry() const { return registry_; }

 private:
  sdk::KernelRegistry registry_;
};

// ---- a graph: Add(x, w) with w constant, Fail(x), Probe(x), Add(x, i), ReadsSecond(x)

struct Graph {
  std::vector<int64_t> dims{2};
  float weights[2] = {1.f, 2.f};
  OnyxTensorView weight_view{sizeof(OnyxTensorView), ONYX_DTYPE_FLOAT32, ONYX_MEMORY_HOST, 1, dims.data(), weights};
  std::vector<OnyxValueInfo> values;
  std::vector<std::vector<int32_t>> ins, outs;
  std::vector<OnyxNodeView> nodes;
  OnyxGraphView view{};

  Graph() {
    auto value = [&](const char* name, int32_t dtype, uint32_t flags, const OnyxTensorView* constant) {
      values.push_back({sizeof(OnyxValueInfo), name, dtype, 1, dims.data(), flags, constant});
    };
    value("x", ONYX_DTYPE_FLOAT32, ONYX_VALUE_GRAPH_INPUT, nullptr);
    value("w", ONYX_DTYPE_FLOAT32, ONYX_VALUE_CONSTANT, &weight_view);
    value("i", ONYX_DTYPE_INT32, ONYX_VALUE_GRAPH_INPUT, nullptr);
    value("y", ONYX_DTYPE_FLOAT32, 0, nullptr);
    ins = {{0, 1}, {0}, {0}, {0, 2}, {0}};
    outs = {{3}, {3}, {3}, {3}, {3}};
    const char* ops[] = {"Add", "Fail", "Probe", "Add", "ReadsSecond"};
    const char* names[] = {"add", "fail", "probe", "mixed", "second"};
    for (size_t k = 0; k < 5; ++k)
      nodes.push_back({sizeof(OnyxNodeView), names[k], ops[k], "", 17, ins[k].data(), ins[k].size(), outs[k].data(),
                       outs[k].size(), nullptr, 0});
    view = {sizeof(OnyxGraphView), values.data(), values.size(), nodes.data(), nodes.size()};
  }
};

struct Opened {
  OnyxPlugin* plugin = nullptr;
  const OnyxProviderApi* api = nullptr;
  OnyxDevice* device = nullptr;
  explicit Opened(const OnyxHostApi& host) {
    OnyxPluginCreateArgs args{sizeof args, host.abi_version, &host, "in-process", nullptr};
    EXPECT_EQ(sdk::ProviderTable<TestProvider>::create(&args, &plugin, &api), nullptr);
    EXPECT_EQ(api->device_open(plugin, 0, nullptr, 0, nullptr, &device), nullptr);
  }
  ~Opened() {
    api->device_close(device);
    api->plugin_destroy(plugin);
  }
};

std::string take_message(OnyxStatus* st, char* host = nullptr) {
  if (!st) return "";
  std::string m = as_fake(st)->message;
  if (host) *host = as_fake(st)->host;
  delete as_fake(st);
  return m;
}

TEST(Sdk, DeclarativeConstraintsGiveReasons) {
  Graph g;
  Opened p(kHostA);
  std::vector<OnyxNodeClaim> claims(g.view.node_count, OnyxNodeClaim{sizeof(OnyxNodeClaim), false, 0, {}});
  ASSERT_EQ(p.api->get_capability(p.device, &g.view, claims.data()), nullptr);
  EXPECT_TRUE(claims[0].claimed);
  EXPECT_TRUE(claims[1].claimed);
  EXPECT_FALSE(claims[3].claimed);
  EXPECT_STREQ(claims[3].reason, "Add: input 1 has type int32; supported: float32, float64");

  // An input count the definition does not take.
  g.nodes[0].input_count = 1;
  ASSERT_EQ(p.api->get_capability(p.device, &g.view, claims.data()), nullptr);
  EXPECT_STREQ(claims[0].reason, "Add: expects 2 inputs, the node has 1");
  // An opset before the definition's range.
  g.nodes[0].input_count = 2;
  g.nodes[0].opset_version = 6;
  ASSERT_EQ(p.api->get_capability(p.device, &g.view, claims.data()), nullptr);
  EXPECT_STREQ(claims[0].reason, "no kernel for opset 6 of Add");
}

TEST(Sdk, TypeVariableBindsOneType) {
  Graph g;
  g.values[2].dtype = ONYX_DTYPE_FLOAT64;  // Add(float32, float64): both are T
  Opened p(kHostA);
  std::vector<OnyxNodeClaim> claims(g.view.node_count, OnyxNodeClaim{sizeof(OnyxNodeClaim), false, 0, {}});
  ASSERT_EQ(p.api->get_capability(p.device, &g.view, claims.data()), nullptr);
  EXPECT_STREQ(claims[3].reason, "Add: input 1 has type float64 but input 0 has float32 (both are type T)");
}

TEST(Sdk, CapabilityBorrowsConstantsAndCreationCopiesThem) {
  Graph g;
  Opened p(kHostA);
  borrowed_seen = copied_seen = 0;
  std::vector<OnyxNodeClaim> claims(g.view.node_count, OnyxNodeClaim{sizeof(OnyxNodeClaim), false, 0, {}});
  ASSERT_EQ(p.api->get_capability(p.device, &g.view, claims.data()), nullptr);
  EXPECT_EQ(borrowed_seen.load(), 1);
  EXPECT_EQ(copied_seen.load(), 0);
  uint32_t node = 0;
  OnyxKernel* kernel = nullptr;
  ASSERT_EQ(p.api->kernel_create(p.device, &g.view, &node, 1, &kernel), nullptr);
  EXPECT_EQ(copied_seen.load(), 1);
  p.api->kernel_destroy(kernel);
}

TEST(Sdk, FactoryFailureReachesTheHost) {
  Graph g;
  Opened p(kHostA);
  uint32_t node = 1;
  OnyxKernel* kernel = nullptr;
  OnyxStatus* st = p.api->kernel_create(p.device, &g.view, &node, 1, &kernel);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(as_fake(st)->code, ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take_message(st), "Fail node 'fail': refused");
  EXPECT_EQ(kernel, nullptr);
}

TEST(Sdk, AKernelReadingPastTheNodesInputsGetsInvalidArgument) {
  Graph g;
  Opened p(kHostA);
  uint32_t node = 4;
  OnyxKernel* kernel = nullptr;
  OnyxStatus* st = p.api->kernel_create(p.device, &g.view, &node, 1, &kernel);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(as_fake(st)->code, ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take_message(st), "the node has 1 input; the kernel needs input 1");
  EXPECT_EQ(kernel, nullptr);
}

// Two hosts with different tables drive one provider library at once: each
// plugin object keeps its own host, so every status comes from the host that
// made the call (with one process-global table, some would not).
TEST(Sdk, EachPluginKeepsItsOwnHost) {
  Graph g;
  Opened a(kHostA), b(kHostB);
  std::atomic<int> wrong{0};
  auto drive = [&](Opened& p, char id) {
    for (int i = 0; i < 2000; ++i) {
      uint32_t node = 1;
      OnyxKernel* kernel = nullptr;
      char host = 0;
      take_message(p.api->kernel_create(p.device, &g.view, &node, 1, &kernel), &host);
      if (host != id) ++wrong;
    }
  };
  std::thread ta(drive, std::ref(a), 'A'), tb(drive, std::ref(b), 'B');
  ta.join();
  tb.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Sdk, ParallelForBodiesSeeTheCallingHost) {
  Graph g;
  Opened p(kHostB);
  uint32_t node = 2;
  OnyxKernel* kernel = nullptr;
  ASSERT_EQ(p.api->kernel_create(p.device, &g.view, &node, 1, &kernel), nullptr);
  EXPECT_EQ(take_message(p.api->kernel_compute(kernel, nullptr)), "");
  p.api->kernel_destroy(kernel);
  EXPECT_EQ(sdk::calling_host_or_null(), nullptr);  // no ABI call in progress here
}

TEST(Sdk, CreateChecksItsArguments) {
  OnyxPluginCreateArgs args{sizeof args, kHostA.abi_version, &kHostA, "in-process", nullptr};
  const OnyxProviderApi* api = nullptr;
  char host = 0;
  EXPECT_NE(take_message(sdk::ProviderTable<TestProvider>::create(&args, nullptr, &api), &host), "");
  EXPECT_EQ(host, 'A');
  // Without a host table nothing can be reported: no plugin, no table.
  OnyxPlugin* plugin = reinterpret_cast<OnyxPlugin*>(&args);
  args.host = nullptr;
  EXPECT_EQ(sdk::ProviderTable<TestProvider>::create(&args, &plugin, &api), nullptr);
  EXPECT_EQ(plugin, nullptr);
  EXPECT_EQ(api, nullptr);
}

TEST(Sdk, StatusOrReleasesAnUnclaimedStatus) {
  // Inside an ABI call (here: a scope standing in for one), a StatusOr that
  // is dropped releases its status through the calling host.
  sdk::CallingHostScope scope(&kHostA);
  sdk::StatusOr<int> failed = sdk::make_status(ONYX_STATUS_INTERNAL, "dropped");
  EXPECT_FALSE(failed.ok());
  sdk::StatusOr<int> value = 3;
  EXPECT_TRUE(value.ok());
  EXPECT_EQ(value.value(), 3);
}

TEST(Sdk, DTypeSetNamesFollowTheMessageOrder) {
  EXPECT_EQ((sdk::dtypes::kHalf | sdk::dtypes::kFloat).names(), "float32, float64, float16, bfloat16");
  EXPECT_TRUE(sdk::dtypes::kNumeric.contains(ONYX_DTYPE_UINT64));
  EXPECT_FALSE(sdk::dtypes::kNumeric.contains(ONYX_DTYPE_BOOL));
}

}  // namespace
