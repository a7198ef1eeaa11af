// sdk_devices_test.cpp: devices as the SDK's table reports them (ABI 1.3):
// several devices with their stable ids and free memory, written only as far
// as the caller's struct_size reaches (a 1.0 host's smaller struct stays
// untouched past its end), and the host's MemAvailable parsed safely.
#include <onyx/plugin_sdk.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace sdk = onyx::sdk;

namespace {

OnyxStatus* create_status(int32_t code, const char* message) {
  return code == ONYX_STATUS_OK ? nullptr : reinterpret_cast<OnyxStatus*>(new std::string(message));
}
std::string take_message(OnyxStatus* st) {
  if (!st) return "";
  std::string* m = reinterpret_cast<std::string*>(st);
  std::string text = *m;
  delete m;
  return text;
}

OnyxHostApi make_host() {
  OnyxHostApi h{};
  h.struct_size = sizeof h;
  h.abi_version = ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR);
  h.status_create = create_status;
  h.status_release = [](OnyxStatus* s) { delete reinterpret_cast<std::string*>(s); };
  h.status_code = [](const OnyxStatus*) { return int32_t(ONYX_STATUS_INTERNAL); };
  h.status_message = [](const OnyxStatus* s) { return reinterpret_cast<const std::string*>(s)->c_str(); };
  h.log = [](int32_t, const char*) {};
  return h;
}
const OnyxHostApi kHost = make_host();

// Three devices, "T:0".."T:2", device k with 1000 + k bytes free.
class ThreeDevices : public sdk::HostMemory {
 public:
  size_t device_count() const { return 3; }
  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t index) const {
    sdk::DeviceDescription d = host_device("device " + std::to_string(index), "Onyx tests");
    d.stable_id = "T:" + std::to_string(index);
    d.free_memory_bytes = 1000 + index;
    return d;
  }
  const sdk::KernelRegistry& registry() const { return registry_; }

 private:
  sdk::KernelRegistry registry_;
};

struct Plugin {
  OnyxPlugin* plugin = nullptr;
  const OnyxProviderApi* api = nullptr;
  Plugin() {
    OnyxPluginCreateArgs args{sizeof args, kHost.abi_version, &kHost, "in-process", nullptr};
    EXPECT_EQ(sdk::ProviderTable<ThreeDevices>::create(&args, &plugin, &api), nullptr);
  }
  ~Plugin() { api->plugin_destroy(plugin); }
};

TEST(SdkDevices, EachDeviceHasItsStableIdAndFreeMemory) {
  Plugin p;
  ASSERT_EQ(p.api->device_count(p.plugin), 3u);
  for (size_t d = 0; d < 3; ++d) {
    OnyxDeviceProperties props{};
    props.struct_size = sizeof props;
    ASSERT_EQ(take_message(p.api->device_properties(p.plugin, d, &props)), "");
    EXPECT_EQ(std::string(props.stable_id), "T:" + std::to_string(d));
    EXPECT_EQ(props.free_memory_bytes, 1000 + d);
    EXPECT_EQ(std::string(props.name), "device " + std::to_string(d));
  }
  OnyxDeviceProperties props{};
  props.struct_size = sizeof props;
  EXPECT_NE(take_message(p.api->device_properties(p.plugin, 3, &props)).find("out of range"), std::string::npos);
  OnyxDevice* device = nullptr;
  ASSERT_EQ(take_message(p.api->device_open(p.plugin, 2, nullptr, 0, nullptr, &device)), "");
  p.api->device_close(device);
}

// A 1.0 host passes ONYX_DEVICE_PROPERTIES_SIZE_1_0 bytes: the 1.3 fields
// lie past it, in memory the host does not own.
TEST(SdkDevices, WritesNothingPastAnOlderHostsStruct) {
  Plugin p;
  for (size_t size : {size_t(ONYX_DEVICE_PROPERTIES_SIZE_1_0), size_t(ONYX_DEVICE_PROPERTIES_SIZE_1_3) - 1,
                      offsetof(OnyxDeviceProperties, memory_alignment)}) {
    std::vector<unsigned char> buf(sizeof(OnyxDeviceProperties) + 16, 0x5A);
    auto* props = reinterpret_cast<OnyxDeviceProperties*>(buf.data());
    props->struct_size = size;
    ASSERT_EQ(take_message(p.api->device_properties(p.plugin, 1, props)), "") << size;
    for (size_t k = size; k < buf.size(); ++k) ASSERT_EQ(buf[k], 0x5A) << "byte " << k << " of a " << size << "-byte struct";
    EXPECT_EQ(props->struct_size, size);
    EXPECT_STREQ(props->name, "device 1");
  }
}

TEST(SdkDevices, RefusesAStructSmallerThanAnyVersion) {
  Plugin p;
  std::vector<unsigned char> buf(sizeof(OnyxDeviceProperties), 0x5A);
  auto* props = reinterpret_cast<OnyxDeviceProperties*>(buf.data());
  props->struct_size = offsetof(OnyxDeviceProperties, kind);
  EXPECT_NE(take_message(p.api->device_properties(p.plugin, 0, props)).find("smaller than any ABI version"),
            std::string::npos);
  for (size_t k = sizeof(size_t); k < buf.size(); ++k) ASSERT_EQ(buf[k], 0x5A) << k;
}

TEST(SdkDevices, HostMemoryDevicesAreCpuZeroWithTheHostsFreeMemory) {
  sdk::DeviceDescription d = sdk::HostMemory::host_device("host", "Onyx");
  EXPECT_EQ(d.stable_id, "cpu:0");
#if defined(__linux__)
  EXPECT_GT(d.free_memory_bytes, 0u);  // MemAvailable is in every Linux since 3.14
#endif
}

TEST(SdkDevices, MemAvailableIsParsedOrUnknownNeverWrong) {
  EXPECT_EQ(sdk::parse_meminfo_available("MemTotal: 100 kB\nMemFree: 5 kB\nMemAvailable:    2048 kB\n"),
            2048u * 1024);
  EXPECT_EQ(sdk::parse_meminfo_available("MemAvailable: 7"), 7u);           // no unit: bytes
  EXPECT_EQ(sdk::parse_meminfo_available("MemTotal: 100 kB\n"), 0u);        // absent
  EXPECT_EQ(sdk::parse_meminfo_available("MemAvailable: kB\n"), 0u);        // no number
  EXPECT_EQ(sdk::parse_meminfo_available("MemAvailable: 12 MB\n"), 0u);     // unknown unit
  EXPECT_EQ(sdk::parse_meminfo_available("MemAvailable: -3 kB\n"), 0u);     // negative
  EXPECT_EQ(sdk::parse_meminfo_available("MemAvailable: 99999999999999999999 kB\n"), 0u);  // past 64 bits
  EXPECT_EQ(sdk::parse_meminfo_available("MemAvailable: 18014398509481984 kB\n"), 0u);    // 2^54 kB overflows bytes
  EXPECT_EQ(sdk::parse_meminfo_available(""), 0u);
  EXPECT_EQ(sdk::parse_meminfo_available(std::string("MemAvailable: 1\0 kB", 19)), 0u);  // garbage after the number
}

}  // namespace
