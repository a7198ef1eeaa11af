// Loading plugins from disk: negotiation, refusals, unavailability, missing
// dependencies. Uses the purpose-built plugins in tests/plugins.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "plugin/provider.h"

namespace onyx::runtime {
namespace {
namespace fs = std::filesystem;

std::string test_plugin(const std::string& name) {
  return std::string(ONYX_TEST_PLUGIN_DIR) + "/libonyx_provider_" + name + ".so";
}

TEST(Loader, LoadsCpuByNameFromTheSearchPath) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  auto cpu = registry.get("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ((*cpu)->name(), "cpu");
  EXPECT_TRUE((*cpu)->availability().ok());
  EXPECT_EQ((*cpu)->device_count(), 1u);
  EXPECT_EQ((*cpu)->abi_version(), kHostMaxAbi);
  // Cached: the same object comes back.
  EXPECT_EQ(registry.get("cpu").value().get(), cpu.value().get());
}

TEST(Loader, UnknownNameListsTheFoldersSearched) {
  ProviderRegistry registry;
  registry.add_search_dir("/nonexistent/onyx-dir");
  auto p = registry.get("no_such_provider");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ONYX_STATUS_NOT_FOUND);
  EXPECT_NE(p.status().message().find("libonyx_provider_no_such_provider.so"), std::string::npos);
  EXPECT_NE(p.status().message().find("/nonexistent/onyx-dir"), std::string::npos);
}

TEST(Loader, NewerMinorPluginLoadsAtTheHostVersion) {
  auto p = Provider::load(test_plugin("newer_minor"));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ((*p)->plugin_max_abi(), ONYX_ABI_VERSION(1, 7));
  EXPECT_EQ((*p)->abi_version(), kHostMaxAbi);  // negotiated down to what the host knows
  EXPECT_GT((*p)->api().struct_size, sizeof(OnyxProviderApi));
  EXPECT_TRUE((*p)->availability().ok());
}

TEST(Loader, IncompatibleMajorIsRefusedNamingBothVersions) {
  auto p = Provider::load(test_plugin("major_two"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ONYX_STATUS_INCOMPATIBLE);
  const std::string& m = p.status().message();
  EXPECT_NE(m.find("2.0 to 2.1"), std::string::npos) << m;
  EXPECT_NE(m.find("speaks 1.0"), std::string::npos) << m;
  EXPECT_NE(m.find("major_two"), std::string::npos) << m;
}

TEST(Loader, UnavailableDeviceIsReportedWithTheReason) {
  auto p = Provider::load(test_plugin("ghost"));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  Status st = (*p)->availability();
  EXPECT_EQ(st.code(), ONYX_STATUS_UNAVAILABLE);
  EXPECT_NE(st.message().find("libghost.so.1"), std::string::npos) << st.message();
  EXPECT_EQ((*p)->device_count(), 0u);
}

TEST(Loader, MissingDependencyIsNamed) {
  fs::path dir = fs::temp_directory_path() / ("onyx_loader_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(test_plugin("needsdep"), dir / "libonyx_provider_needsdep.so",
                fs::copy_options::overwrite_existing);
  auto p = Provider::load((dir / "libonyx_provider_needsdep.so").string());
  fs::remove_all(dir);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("libonyx_test_dependency.so"), std::string::npos)
      << p.status().message();
  // With its dependency beside it, the same plugin loads.
  auto ok = Provider::load(test_plugin("needsdep"));
  EXPECT_TRUE(ok.ok()) << ok.status().to_string();
}

TEST(Loader, ALibraryThatIsNotAPluginIsRefused) {
  auto p = Provider::load(std::string(ONYX_TEST_PLUGIN_DIR) + "/libonyx_test_dependency.so");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ONYX_STATUS_INCOMPATIBLE);
  EXPECT_NE(p.status().message().find("not an Onyx provider plugin"), std::string::npos);
}

// bad-inputs.md, class 6: a plugin cut short (its first 1,000 bytes, its
// first half) made dlopen fault (SIGBUS) in every scan of its folder. Its ELF
// layout is checked against the file's size first, and it is refused.
TEST(Loader, ATruncatedLibraryIsRefusedBeforeLoading) {
  namespace fs = std::filesystem;
  const fs::path real = fs::path(ONYX_TEST_PLUGIN_DIR) / "libonyx_test_dependency.so";
  const uintmax_t size = fs::file_size(real);
  const fs::path dir = fs::temp_directory_path() / ("onyx_truncated_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (uintmax_t keep : {uintmax_t(1000), size / 2, size - 1}) {
    const fs::path cut = dir / ("libonyx_provider_cut" + std::to_string(keep) + ".so");
    fs::copy_file(real, cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, keep);
    auto p = Provider::load(cut.string());
    ASSERT_FALSE(p.ok()) << keep << " bytes loaded";
    EXPECT_EQ(p.status().code(), ONYX_STATUS_INCOMPATIBLE) << p.status().to_string();
    EXPECT_NE(p.status().message().find("(truncated?)"), std::string::npos) << p.status().to_string();
  }
  fs::remove_all(dir);
}

// bad-inputs.md, class 6: device_count returning SIZE_MAX took 3 GB and hung
// the host enumerating; the count is not believed and availability says why.
TEST(Loader, ADeviceCountPastAnyMachineIsNotBelieved) {
  auto p = Provider::load(test_plugin("device_count_lies"));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ((*p)->device_count(), 0u);
  Status available = (*p)->availability();
  EXPECT_EQ(available.code(), ONYX_STATUS_INCOMPATIBLE);
  EXPECT_NE(available.message().find("reports 18446744073709551615 devices"), std::string::npos) << available.to_string();
}

// bad-inputs.md, class 6: plugin_availability returning the pointer 0x10
// as a status made the host read it (segfault). Only statuses the host made
// are read; any other pointer is named as a plugin bug.
TEST(Loader, AStatusTheHostDidNotCreateIsNotRead) {
  auto p = Provider::load(test_plugin("bogus_status"));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  Status available = (*p)->availability();
  EXPECT_EQ(available.code(), ONYX_STATUS_INTERNAL);
  EXPECT_NE(available.message().find("a plugin returned 0x10 as a status, which the host did not create"),
            std::string::npos)
      << available.to_string();
}

// Sets ONYX_TEST_LIE (read by the lies test plugin) for one test.
class Lie {
 public:
  explicit Lie(const char* which) { ::setenv("ONYX_TEST_LIE", which, 1); }
  ~Lie() { ::unsetenv("ONYX_TEST_LIE"); }
};

// plugin_handshake fuzzer: a device name and vendor filling their arrays (no
// NUL) were handed on as C strings, read past their ends.
TEST(Loader, DevicePropertiesWithoutTheirNulAreTerminated) {
  Lie lie("unterminated_names");
  auto p = Provider::load(test_plugin("lies"));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  auto props = (*p)->device_properties(0);
  ASSERT_TRUE(props.ok()) << props.status().to_string();
  EXPECT_EQ(std::string(props->name), std::string(sizeof props->name - 1, 'N'));
  EXPECT_EQ(std::string(props->vendor), std::string(sizeof props->vendor - 1, 'V'));
}

// plugin_handshake fuzzer: memory_alignment 3 reached memory_alloc, whose
// alignment must be a power of two; 2^31 padded every buffer to 2 GiB.
TEST(Loader, AMemoryAlignmentThatIsNoPowerOfTwoOrPastAHugePageIsRefused) {
  for (const char* which : {"alignment_3", "alignment_2g"}) {
    Lie lie(which);
    auto p = Provider::load(test_plugin("lies"));
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    auto props = (*p)->device_properties(0);
    ASSERT_FALSE(props.ok()) << which;
    EXPECT_EQ(props.status().code(), ONYX_STATUS_INCOMPATIBLE);
    const std::string& m = props.status().message();
    EXPECT_NE(m.find(std::string("reports memory_alignment ") + (which == std::string("alignment_3") ? "3" : "2147483648") +
                     ", which is not a power of two up to 2097152"),
              std::string::npos)
        << m;
  }
}

// A plugin built against a bigger OnyxDeviceProperties than the struct_size
// it was handed writes past the host's struct: caught by the guard bytes
// after it (plugin/write_guard.h), the call refused naming the plugin.
TEST(Loader, DevicePropertiesWrittenPastTheStructAreRefused) {
  Lie lie("properties_overrun");
  auto p = Provider::load(test_plugin("lies"));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  auto props = (*p)->device_properties(0);
  ASSERT_FALSE(props.ok());
  EXPECT_EQ(props.status().code(), ONYX_STATUS_INTERNAL);
  EXPECT_NE(props.status().message().find("wrote past the end of device_properties' OnyxDeviceProperties (" +
                                          std::to_string(sizeof(OnyxDeviceProperties)) +
                                          " bytes handed to it; at least 64 more written)"),
            std::string::npos)
      << props.status().message();
}

TEST(Loader, AProviderTableSmallerThanAbi10IsRefusedNamingTheSizes) {
  auto p = Provider::load(test_plugin("short_table"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ONYX_STATUS_INCOMPATIBLE);
  const std::string& m = p.status().message();
  EXPECT_NE(m.find("short_table"), std::string::npos) << m;
  EXPECT_NE(m.find(std::to_string(ONYX_PROVIDER_API_SIZE_1_0 - sizeof(void*)) + " bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("ABI 1.0's " + std::to_string(ONYX_PROVIDER_API_SIZE_1_0)), std::string::npos) << m;
}

TEST(Loader, ATruncatedEntryIsRefused) {
  auto p = Provider::load(test_plugin("truncated_entry"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ONYX_STATUS_INCOMPATIBLE);
  const std::string& m = p.status().message();
  EXPECT_NE(m.find("libonyx_provider_truncated_entry.so: provider entry is truncated"), std::string::npos) << m;
  EXPECT_NE(m.find("struct_size " + std::to_string(offsetof(OnyxPluginEntry, create))), std::string::npos) << m;
}

TEST(Loader, AnOptimizerPluginIsNotAProvider) {
  auto p = Provider::load(std::string(ONYX_TEST_PLUGIN_DIR) + "/libonyx_optimizer_major_two.so");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ONYX_STATUS_INCOMPATIBLE);
  EXPECT_NE(p.status().message().find("not an Onyx provider plugin"), std::string::npos) << p.status().message();
}

TEST(Loader, ANameThatIsNeitherAPathNorAPlainNameIsRefused) {
  ProviderRegistry registry;
  auto p = registry.get("cpu;rm");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
}

TEST(Loader, MissingFileIsNotFound) {
  auto p = Provider::load("/nonexistent/libonyx_provider_x.so");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ONYX_STATUS_NOT_FOUND);
}

TEST(Loader, UnloadAndReloadKeepsWorking) {
  for (int k = 0; k < 3; ++k) {
    auto p = Provider::load(test_plugin("decliner"));
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ((*p)->name(), "decliner");
  }
}

}  // namespace
}  // namespace onyx::runtime
