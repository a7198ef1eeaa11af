// sdk_cache_test.cpp: the SDK's compiled-partition cache hooks (ABI 1.2,
// sdk/kernel_cache.hpp) through the table ProviderTable generates: the three
// entries exist only for a provider with make_kernel_from_cache, a kernel
// round-trips through the host's OnyxBlobWriteFn, a short blob is refused,
// and BlobReader never reads past its end.
#include <onyx/plugin_sdk.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace sdk = onyx::sdk;

namespace {

struct FakeStatus {
  int32_t code;
  std::string message;
};

OnyxHostApi make_host() {
  OnyxHostApi h{};
  h.struct_size = sizeof h;
  h.abi_version = ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR);
  h.status_create = [](int32_t code, const char* message) {
    return code == ONYX_STATUS_OK ? nullptr : reinterpret_cast<OnyxStatus*>(new FakeStatus{code, message});
  };
  h.status_release = [](OnyxStatus* s) { delete reinterpret_cast<FakeStatus*>(s); };
  h.status_code = [](const OnyxStatus* s) { return reinterpret_cast<const FakeStatus*>(s)->code; };
  h.status_message = [](const OnyxStatus* s) { return reinterpret_cast<const FakeStatus*>(s)->message.c_str(); };
  h.log = [](int32_t, const char*) {};
  return h;
}
const OnyxHostApi kHost = make_host();

class CachedKernel : public sdk::Kernel {
 public:
  explicit CachedKernel(int32_t v) : value(v) {}
  int32_t value;
  OnyxStatus* compute(sdk::ComputeContext&) override { return nullptr; }
  OnyxStatus* serialize(sdk::BlobWriter& out) const override { return out.value(value); }
};

class PlainProvider : public sdk::HostMemory {
 public:
  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t) const { return host_device("test", "Onyx"); }
  OnyxStatus* capability(sdk::NoDeviceState&, const OnyxGraphView&, std::span<OnyxNodeClaim>) const {
    return nullptr;  // claims nothing: only kernel creation is exercised
  }
  sdk::KernelResult make_kernel(sdk::NoDeviceState&, const OnyxGraphView&, std::span<const uint32_t>) const {
    return std::make_unique<CachedKernel>(42);
  }
};

class CachingProvider : public PlainProvider {
 public:
  std::string cache_compatibility(sdk::NoDeviceState&) const { return "isa-x"; }
  sdk::KernelResult make_kernel_from_cache(sdk::NoDeviceState&, const OnyxGraphView&, std::span<const uint32_t>,
                                           sdk::BlobReader& blob) const {
    int32_t v = 0;
    if (!blob.value(&v) || blob.left() != 0) return sdk::make_status(ONYX_STATUS_DATA_LOSS, "not a CachedKernel");
    return std::make_unique<CachedKernel>(v);
  }
};

TEST(SdkCache, EntriesComeWithMakeKernelFromCache) {
  const OnyxProviderApi& plain = sdk::ProviderTable<PlainProvider>::table();
  EXPECT_EQ(plain.kernel_serialize, nullptr);
  EXPECT_EQ(plain.kernel_create_from_cache, nullptr);
  EXPECT_EQ(plain.device_cache_compatibility, nullptr);

  OnyxPlugin* plugin = nullptr;
  const OnyxProviderApi* api = nullptr;
  OnyxDevice* device = nullptr;
  OnyxPluginCreateArgs args{sizeof args, kHost.abi_version, &kHost, "in-process", nullptr};
  ASSERT_EQ(sdk::ProviderTable<CachingProvider>::create(&args, &plugin, &api), nullptr);
  ASSERT_EQ(api->device_open(plugin, 0, nullptr, 0, nullptr, &device), nullptr);
  ASSERT_NE(api->kernel_serialize, nullptr);
  EXPECT_STREQ(api->device_cache_compatibility(device), "isa-x");

  int64_t dims[1] = {2};
  OnyxValueInfo values[2] = {{sizeof(OnyxValueInfo), "x", ONYX_DTYPE_FLOAT32, 1, dims, ONYX_VALUE_GRAPH_INPUT, nullptr},
                             {sizeof(OnyxValueInfo), "y", ONYX_DTYPE_FLOAT32, 1, dims, 0, nullptr}};
  int32_t in = 0, out = 1;
  OnyxNodeView node{sizeof(OnyxNodeView), "relu", "Relu", "", 17, &in, 1, &out, 1, nullptr, 0};
  OnyxGraphView graph{sizeof(OnyxGraphView), values, 2, &node, 1};
  const uint32_t index = 0;
  OnyxKernel* compiled = nullptr;
  ASSERT_EQ(api->kernel_create(device, &graph, &index, 1, &compiled), nullptr);
  std::string blob;
  OnyxBlobWriteFn append = [](void* writer, const void* bytes, size_t size) -> OnyxStatus* {
    static_cast<std::string*>(writer)->append(static_cast<const char*>(bytes), size);
    return nullptr;
  };
  EXPECT_EQ(api->kernel_serialize(compiled, append, &blob), nullptr);
  EXPECT_EQ(blob.size(), sizeof(int32_t));
  OnyxKernel* loaded = nullptr;
  EXPECT_EQ(api->kernel_create_from_cache(device, &graph, &index, 1, blob.data(), blob.size(), &loaded), nullptr);
  EXPECT_NE(loaded, nullptr);
  OnyxKernel* refused = nullptr;  // one byte short: refused, nothing read past the end
  OnyxStatus* st = api->kernel_create_from_cache(device, &graph, &index, 1, blob.data(), blob.size() - 1, &refused);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(kHost.status_code(st), ONYX_STATUS_DATA_LOSS);
  EXPECT_STREQ(kHost.status_message(st), "not a CachedKernel");
  kHost.status_release(st);
  EXPECT_EQ(refused, nullptr);
  api->kernel_destroy(compiled);
  api->kernel_destroy(loaded);
  api->device_close(device);
  api->plugin_destroy(plugin);
}

TEST(SdkCache, BlobReaderNeverReadsPastTheEnd) {
  const std::byte bytes[6] = {};
  sdk::BlobReader reader({bytes, sizeof bytes});
  int32_t v = 0;
  EXPECT_TRUE(reader.value(&v));
  EXPECT_FALSE(reader.value(&v));
  EXPECT_EQ(reader.left(), 2u);
  uint16_t halves[2] = {};
  EXPECT_FALSE(reader.values(halves, SIZE_MAX / 2));  // a count whose byte size overflows
  EXPECT_TRUE(reader.values(halves, 1));
  EXPECT_EQ(reader.left(), 0u);
}

}  // namespace
