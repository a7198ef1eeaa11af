// abi_suite.cpp: the abi suite's cases. Each throws CaseError on a violation.
#include "abi_suite.h"

#include <dirent.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "abi_host.h"
#include "abi_threads.h"
#include "graph_view.h"

namespace onyx::conformance {

namespace {

void load_and_entry(const std::string& path) {
  auto p = LoadedPlugin::load(path);
  const OnyxPluginEntry* e = p->entry();
  if (e->struct_size < ONYX_PLUGIN_ENTRY_SIZE_1_0)
    throw CaseError("entry struct_size " + std::to_string(e->struct_size) + " is smaller than ABI 1.0's " +
                    std::to_string(ONYX_PLUGIN_ENTRY_SIZE_1_0));
  if (!e->name || !*e->name) throw CaseError("entry name is empty");
  if (std::strlen(e->name) > 64) throw CaseError("entry name is longer than 64 characters");
  if (!e->version) throw CaseError("entry version is NULL");
  if (e->min_abi_version > e->max_abi_version)
    throw CaseError("entry ABI range is empty: min " + version_string(e->min_abi_version) + " > max " +
                    version_string(e->max_abi_version));
}

void provider_table(const std::string& path) {
  auto p = LoadedPlugin::load(path);
  bool async = false;
  if (ONYX_API_HAS(*p, device_count) && ONYX_API_HAS(*p, device_properties) &&
      p->api()->device_count(p->plugin()) > 0) {
    OnyxDeviceProperties props{};
    props.struct_size = sizeof props;
    check_status(p->api()->device_properties(p->plugin(), 0, &props), "device_properties");
    async = props.asynchronous;
  }
  auto missing = missing_required_functions(*p, async);
  const std::string sizes = "struct_size " + std::to_string(p->api()->struct_size) + ", ABI 1.0's table is " +
                            std::to_string(ONYX_PROVIDER_API_SIZE_1_0) + " bytes";
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw CaseError("provider table (" + sizes + ") lacks required functions: " + list);
  }
  // Every 1.x plugin was built with a header that has the whole 1.0 table.
  if (p->api()->struct_size < ONYX_PROVIDER_API_SIZE_1_0)
    throw CaseError("provider table (" + sizes + ") is smaller than any 1.x header's");
}

// A host built against a newer minor version: larger args and host table.
void newer_host_structs(const std::string& path) {
  struct NewerHostApi {
    OnyxHostApi base;
    void (*future_a)(void);
    void (*future_b)(void);
  };
  static NewerHostApi newer{};
  newer.base = *host_api();
  newer.base.struct_size = sizeof newer;
  auto p = LoadedPlugin::load(path, sizeof(OnyxPluginCreateArgs) + 64, &newer.base);
  if (p->api()->device_count(p->plugin()) == 0) throw DeviceUnavailable("device unavailable: no device to ask");
  constexpr size_t kExtra = 64;
  std::vector<unsigned char> buf(sizeof(OnyxDeviceProperties) + kExtra, 0xA5);
  auto* props = reinterpret_cast<OnyxDeviceProperties*>(buf.data());
  props->struct_size = buf.size();
  check_status(p->api()->device_properties(p->plugin(), 0, props), "device_properties with a larger struct");
  // Fields the plugin does not know may be left alone or zeroed (the newer
  // host then reads its defaults), never filled with anything else.
  for (size_t k = sizeof(OnyxDeviceProperties); k < buf.size(); ++k)
    if (buf[k] != 0xA5 && buf[k] != 0)
      throw CaseError("device_properties wrote byte " + std::to_string(k) +
                      " of a larger (newer host) struct, past the fields of its own ABI version");
  if (props->struct_size != buf.size())
    throw CaseError("device_properties changed struct_size from " + std::to_string(buf.size()) + " to " +
                    std::to_string(props->struct_size));
  if (!props->name[0]) throw CaseError("device_properties left the device name empty");
}

// A struct smaller than the plugin's: fields past struct_size must stay untouched.
void older_host_structs(const std::string& path) {
  auto p = LoadedPlugin::load(path);
  if (p->api()->device_count(p->plugin()) == 0) throw DeviceUnavailable("device unavailable: no device to ask");
  const size_t size = offsetof(OnyxDeviceProperties, memory_alignment);
  std::vector<unsigned char> buf(sizeof(OnyxDeviceProperties) + 16, 0x5A);
  auto* props = reinterpret_cast<OnyxDeviceProperties*>(buf.data());
  props->struct_size = size;
  check_status(p->api()->device_properties(p->plugin(), 0, props), "device_properties with a smaller struct");
  for (size_t k = size; k < buf.size(); ++k)
    if (buf[k] != 0x5A)
      throw CaseError("device_properties wrote byte " + std::to_string(k) + " past struct_size " +
                      std::to_string(size) + " (a smaller, older struct)");
}

// Calls that must be refused with a status. Returns the failures and checks
// each status (host-created, a valid code, a message) in `on_status`.
void invalid_calls(const LoadedPlugin& p, const std::function<void(const std::string&, OnyxStatus*)>& on_status) {
  const OnyxProviderApi* api = p.api();
  const size_t count = api->device_count(p.plugin());
  OnyxDeviceProperties props{};
  props.struct_size = sizeof props;
  on_status("device_properties(index = device_count)", api->device_properties(p.plugin(), count, &props));
  on_status("device_properties(out = NULL)", api->device_properties(p.plugin(), 0, nullptr));
  OnyxDevice* dev = nullptr;
  on_status("device_open(index = device_count)", api->device_open(p.plugin(), count, nullptr, 0, nullptr, &dev));
  if (dev) api->device_close(dev);
  on_status("device_open(out = NULL)", api->device_open(p.plugin(), 0, nullptr, 0, nullptr, nullptr));
  if (count == 0) return;
  OpenDevice device(p);
  void* ptr = nullptr;
  on_status("memory_alloc(out = NULL)", api->memory_alloc(device.get(), ONYX_MEMORY_DEVICE, 64, 64, nullptr));
  on_status("memory_alloc(alignment = 3)", api->memory_alloc(device.get(), ONYX_MEMORY_DEVICE, 64, 3, &ptr));
  if (ptr) api->memory_free(device.get(), ONYX_MEMORY_DEVICE, ptr);
  char a[16] = {}, b[16] = {};
  on_status("memory_copy(direction = 7)", api->memory_copy(device.get(), nullptr, 7, a, b, sizeof a));
  OnyxNodeClaim claims[1] = {};
  claims[0].struct_size = sizeof claims[0];
  on_status("get_capability(graph = NULL)", api->get_capability(device.get(), nullptr, claims));
  OnyxKernel* kernel = nullptr;
  uint32_t node = 0;
  on_status("kernel_create(graph = NULL)", api->kernel_create(device.get(), nullptr, &node, 1, &kernel));
  OnyxGraphView empty{sizeof(OnyxGraphView), nullptr, 0, nullptr, 0};
  node = 99;
  on_status("kernel_create(node index out of range)", api->kernel_create(device.get(), &empty, &node, 1, &kernel));
  if (kernel) api->kernel_destroy(kernel);
  api->memory_free(device.get(), ONYX_MEMORY_DEVICE, nullptr);  // must be ignored
}

void null_and_invalid_arguments(const std::string& path) {
  auto p = LoadedPlugin::load(path);
  std::string accepted;
  invalid_calls(*p, [&](const std::string& call, OnyxStatus* st) {
    if (!st) accepted += (accepted.empty() ? "" : ", ") + call;
    if (is_host_status(st)) release_status(st);
  });
  if (!accepted.empty()) throw CaseError("invalid calls returned success: " + accepted);
}

void error_objects(const std::string& path) {
  const long before = live_status_count();
  {
    auto p = LoadedPlugin::load(path);
    std::string problems;
    invalid_calls(*p, [&](const std::string& call, OnyxStatus* st) {
      if (!st) return;  // reported by null_and_invalid_arguments
      if (!is_host_status(st)) {
        problems += call + ": status not created by the host's status_create; ";
        return;
      }
      const int32_t code = status_code_of(st);
      if (code <= ONYX_STATUS_OK || code > ONYX_STATUS_INTERNAL)
        problems += call + ": status code " + std::to_string(code) + " is not an OnyxStatusCode; ";
      if (status_message_of(st).empty()) problems += call + ": empty message; ";
      release_status(st);
    });
    if (!problems.empty()) throw CaseError(problems);
  }
  const long leaked = live_status_count() - before;
  if (leaked > 0)
    throw CaseError(std::to_string(leaked) + " statuses created by the plugin were neither returned nor released");
}

bool aligned(const void* p, size_t alignment) { return reinterpret_cast<uintptr_t>(p) % alignment == 0; }

void allocator_round_trip(const std::string& path) {
  auto p = LoadedPlugin::load(path);
  OpenDevice device(*p);
  const OnyxProviderApi* api = p->api();
  for (size_t bytes : {size_t(1), size_t(3), size_t(64), size_t(4095), size_t(65536), size_t(1) << 20}) {
    for (size_t alignment : {size_t(1), size_t(8), size_t(64), size_t(256), size_t(4096)}) {
      void* ptr = nullptr;
      check_status(api->memory_alloc(device.get(), ONYX_MEMORY_DEVICE, bytes, alignment, &ptr),
                   "memory_alloc(" + std::to_string(bytes) + " bytes, alignment " + std::to_string(alignment) + ")");
      if (!ptr) throw CaseError("memory_alloc of " + std::to_string(bytes) + " bytes returned NULL");
      if (!aligned(ptr, alignment))
        throw CaseError("memory_alloc(" + std::to_string(bytes) + ", alignment " + std::to_string(alignment) +
                        ") returned a misaligned pointer");
      api->memory_free(device.get(), ONYX_MEMORY_DEVICE, ptr);
    }
  }
  void* zero = nullptr;
  check_status(api->memory_alloc(device.get(), ONYX_MEMORY_DEVICE, 0, 64, &zero), "memory_alloc(0 bytes)");
  api->memory_free(device.get(), ONYX_MEMORY_DEVICE, zero);
}

void data_transfer_round_trip(const std::string& path) {
  auto p = LoadedPlugin::load(path);
  OpenDevice device(*p);
  const OnyxProviderApi* api = p->api();
  std::mt19937 rng(7);
  for (size_t bytes : {size_t(1), size_t(17), size_t(4096), size_t(1) << 20}) {
    std::string src(bytes, '\0'), back(bytes, '\0');
    for (char& c : src) c = char(rng());
    void *a = nullptr, *b = nullptr;
    check_status(api->memory_alloc(device.get(), ONYX_MEMORY_DEVICE, bytes, 64, &a), "memory_alloc");
    check_status(api->memory_alloc(device.get(), ONYX_MEMORY_DEVICE, bytes, 64, &b), "memory_alloc");
    struct Free {
      const OnyxProviderApi* api;
      OnyxDevice* d;
      void* a;
      void* b;
      ~Free() {
        api->memory_free(d, ONYX_MEMORY_DEVICE, a);
        api->memory_free(d, ONYX_MEMORY_DEVICE, b);
      }
    } release{api, device.get(), a, b};
    const std::string n = std::to_string(bytes) + " bytes";
    check_status(api->memory_copy(device.get(), nullptr, ONYX_COPY_HOST_TO_DEVICE, a, src.data(), bytes), "host to device, " + n);
    check_status(api->memory_copy(device.get(), nullptr, ONYX_COPY_DEVICE_TO_DEVICE, b, a, bytes), "device to device, " + n);
    check_status(api->memory_copy(device.get(), nullptr, ONYX_COPY_DEVICE_TO_HOST, back.data(), b, bytes), "device to host, " + n);
    if (back != src) throw CaseError("host -> device -> device -> host round trip of " + n + " changed the data");
    if (bytes > 8) {  // a copy into the middle of a buffer
      std::string middle(bytes - 8, 'x');
      check_status(api->memory_copy(device.get(), nullptr, ONYX_COPY_HOST_TO_DEVICE, static_cast<char*>(a) + 4,
                                    middle.data(), middle.size()), "host to device at an offset");
      check_status(api->memory_copy(device.get(), nullptr, ONYX_COPY_DEVICE_TO_HOST, back.data(), a, bytes),
                   "device to host");
      if (back.compare(4, middle.size(), middle) != 0 || back.compare(0, 4, src, 0, 4) != 0 ||
          back.compare(bytes - 4, 4, src, bytes - 4, 4) != 0)
        throw CaseError("a copy to an offset inside a " + n + " buffer wrote outside its range");
    }
    check_status(api->memory_copy(device.get(), nullptr, ONYX_COPY_HOST_TO_DEVICE, a, src.data(), 0),
                 "a zero-byte copy");
  }
}

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * size_t(sysconf(_SC_PAGESIZE));
}

size_t open_fds() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

void load_unload_reload(const std::string& path) {
  auto cycle = [&] {
    auto p = LoadedPlugin::load(path);
    if (p->api()->device_count(p->plugin()) == 0) return;
    OpenDevice device(*p);
    exercise_device(*p, device, 1);
  };
  for (int i = 0; i < 3; ++i) cycle();  // warm-up: first-use allocations
  const size_t rss = resident_bytes(), fds = open_fds();
  const long statuses = live_status_count();
  constexpr int kCycles = 40;
  for (int i = 0; i < kCycles; ++i) cycle();
  const double grown_mib = (double(resident_bytes()) - double(rss)) / (1 << 20);
#ifdef __SANITIZE_ADDRESS__
  // ASan holds freed memory in its quarantine: resident size says nothing
  // here (its leak check at exit does this job).
  constexpr bool kMeasuresMemory = false;
#else
  constexpr bool kMeasuresMemory = true;
#endif
  if (kMeasuresMemory && grown_mib > 8)
    throw CaseError("resident memory grew by " + std::to_string(grown_mib) + " MiB over " +
                    std::to_string(kCycles) + " load/unload cycles");
  if (open_fds() != fds)
    throw CaseError("open file descriptors went from " + std::to_string(fds) + " to " +
                    std::to_string(open_fds()) + " over " + std::to_string(kCycles) + " load/unload cycles");
  if (live_status_count() != statuses) throw CaseError("statuses leaked across load/unload cycles");
}

void thread_safety(const std::string& path) {
  auto p = LoadedPlugin::load(path);
  OpenDevice device(*p);
  run_concurrently(*p, device, 4, 50);
}

const std::map<std::string, void (*)(const std::string&)>& cases() {
  static const std::map<std::string, void (*)(const std::string&)> table = {
      {"load_and_entry", load_and_entry},
      {"provider_table", provider_table},
      {"newer_host_structs", newer_host_structs},
      {"older_host_structs", older_host_structs},
      {"null_and_invalid_arguments", null_and_invalid_arguments},
      {"error_objects", error_objects},
      {"allocator_round_trip", allocator_round_trip},
      {"data_transfer_round_trip", data_transfer_round_trip},
      {"thread_safety", thread_safety},
      {"load_unload_reload", load_unload_reload},
  };
  return table;
}

}  // namespace

std::vector<std::string> abi_case_names() {
  return {"load_and_entry",       "provider_table",           "newer_host_structs",
          "older_host_structs",   "null_and_invalid_arguments", "error_objects",
          "allocator_round_trip", "data_transfer_round_trip", "thread_safety",
          "load_unload_reload"};
}

RunResult run_abi_case(const std::string& name, const std::string& path) {
  RunResult r;
  r.op = "[abi] " + name;
  try {
    cases().at(name)(path);
    r.status = RunStatus::kPassed;
  } catch (const DeviceUnavailable& e) {
    r.status = RunStatus::kUnsupported;
    r.error = e.what();
  } catch (const std::exception& e) {
    r.status = RunStatus::kFailed;
    r.error = e.what();
  }
  return r;
}

}  // namespace onyx::conformance
