// device_policy.h: choosing devices for an application that names no
// providers (SessionOptions::device_policy). The rules (docs/architecture.md,
// "Device policies"):
//  - Only plugins found in the registry's search folders that load, are
//    available and report a device are considered; the others are listed in
//    the partition report's device_policy.skipped with the reason.
//  - Per provider one device: the one with the most free memory (ties: the
//    lowest index). Partitioning gives each node to the first device that
//    claims it, so a second identical device would run nothing, yet cost a
//    context and memory on a GPU.
//  - prefer-gpu: the GPU devices, then the ACCELERATOR devices (each kind in
//    the order the plugins were found), then the "cpu" provider, which runs
//    every op, as the fallback.
//  - prefer-cpu: the "cpu" provider alone (the reference: no device memory,
//    no reduced precision); other host providers (onednn) are named explicitly.
//  - fastest: candidates are each GPU or ACCELERATOR device followed by
//    "cpu", and "cpu" alone. Each is built as a session and timed on inputs
//    made from the model's declared shapes (zeros; a symbolic dim is 1), one
//    warm-up run then up to 5 timed runs (fewer past 2 s); the candidate with
//    the smallest median wins and is the session returned. Candidates that
//    fail to build or run are reported with the error; a model whose input
//    has an unknown rank, or is not a numeric tensor, is refused naming it.
// The session's fallback policy applies to the chosen devices as given.
#pragma once

#include <memory>

#include "core/status.h"
#include "ir/graph.h"
#include "plugin/provider.h"

namespace onyx::runtime {

class Session;
struct SessionOptions;

enum class DevicePolicy { kNone, kPreferGpu, kPreferCpu, kFastest };
const char* device_policy_name(DevicePolicy policy);

// A session on the devices `options.device_policy` chooses (options.providers
// must be empty), with the partition report's device_policy filled.
StatusOr<std::unique_ptr<Session>> create_with_device_policy(ProviderRegistry& registry, const ir::Model& model,
                                                             const SessionOptions& options);

}  // namespace onyx::runtime
