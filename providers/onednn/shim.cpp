// The oneDNN provider plugin proper: a small loader for the kernels library
// (libonyx_onednn_kernels.so, beside this file), which is what links oneDNN.
//
// Why a separate library: oneDNN runs on OpenMP (Debian's build), and
// OpenMP's default after each parallel region is to keep its threads
// spinning for about 300,000 iterations. Interleaved with the host's thread
// pool (nodes that fall back to another provider) spinning threads can starve
// it: the transformer block of bench/provider_bench.cpp once took 82 ms
// instead of 2.7 ms per run. Sleeping at once (OMP_WAIT_POLICY=PASSIVE, the
// first answer) costs a futex wake-up at every primitive instead: two threads
// ran slower than one (test MLP at batch 64: 0.19 ms against 0.12 ms). So
// OpenMP spins briefly, then sleeps, as the host pool does: GOMP_SPINCOUNT=
// 20000 (tens of microseconds). Measured on 2 threads: the MLP at batch 64
// 0.187 -> 0.117 ms, the transformer block at batch 1 0.460 -> 0.279 ms, and
// 6 MatMuls on oneDNN interleaved with 6 Sin on the CPU provider 0.857 ->
// 0.405 ms (the CPU provider alone: 0.378 ms). libgomp reads the setting
// once, in its constructor, when it is loaded with oneDNN, so this file sets
// it (unless the application chose OMP_WAIT_POLICY or GOMP_SPINCOUNT), loads
// the kernels library, and removes the variable again: the process's
// environment (other providers, child processes) is left as it was. Nothing
// else in Onyx uses OpenMP; an application that loaded libgomp before keeps
// its own policy.
#include <dlfcn.h>
#include <unistd.h>
#include <onyx_provider.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using CreateFn = OnyxStatus* (*)(const OnyxPluginCreateArgs*, OnyxPlugin**, const OnyxProviderApi**);

OnyxStatus* create(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin, const OnyxProviderApi** api) {
  if (plugin) *plugin = nullptr;
  if (api) *api = nullptr;
  // Without a host table no status can be made: the host sees no plugin.
  if (!args || !args->host || !args->host->status_create) return nullptr;
  if (!plugin || !api)
    return args->host->status_create(ONYX_STATUS_INVALID_ARGUMENT, "onednn: create: plugin or api is NULL");
  std::string path = args->plugin_path ? args->plugin_path : "";
  size_t slash = path.rfind('/');
  std::string kernels = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) +
                        "libonyx_onednn_kernels.so";
  // setenv is not thread-safe against concurrent getenv: plugins are created
  // while the host loads providers, before sessions run.
  bool chosen = getenv("OMP_WAIT_POLICY") != nullptr || getenv("GOMP_SPINCOUNT") != nullptr;
  if (!chosen) setenv("GOMP_SPINCOUNT", "20000", /*overwrite=*/1);
  // The kernels library is linked with -z nodelete: never unloaded.
  void* handle = dlopen(kernels.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!chosen) unsetenv("GOMP_SPINCOUNT");
  if (!handle) {
    const char* why = dlerror();
    std::string message = "onednn: cannot load " + kernels + ": " + (why ? why : "unknown error");
    if (access(kernels.c_str(), F_OK) != 0) message += " (the plugin's kernels library is missing: an incomplete install)";
    else message += " (a library it needs is missing: is oneDNN, Debian's libdnnl2, installed?)";
    return args->host->status_create(ONYX_STATUS_UNAVAILABLE, message.c_str());
  }
  auto real_create = reinterpret_cast<CreateFn>(dlsym(handle, "onyx_onednn_create"));
  if (!real_create) {
    std::string message = "onednn: " + kernels + " has no onyx_onednn_create: a mismatched build";
    return args->host->status_create(ONYX_STATUS_INCOMPATIBLE, message.c_str());
  }
  return real_create(args, plugin, api);
}

const OnyxPluginEntry kEntry = {
    ONYX_PLUGIN_MAGIC,
    sizeof(OnyxPluginEntry),
    ONYX_ABI_VERSION(1, 0),
    ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR),
    "onednn",
    "0.1.0",
    create,
};

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
