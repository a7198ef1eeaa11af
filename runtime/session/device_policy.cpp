#include "session/device_policy.h"

#include <algorithm>
#include <chrono>

#include "session/device_choice.h"
#include "session/session.h"

namespace onyx::runtime {

namespace {

// One device a policy may open: the provider's device with the most free memory.
struct FoundDevice {
  std::shared_ptr<Provider> provider;
  size_t index = 0;
  int32_t kind = ONYX_DEVICE_CPU;
};

struct Inventory {
  std::vector<FoundDevice> devices;  // one per usable provider, in the order found
  std::vector<UnavailableProvider> skipped;
};

Inventory take_inventory(ProviderRegistry& registry) {
  Inventory inventory;
  for (const ProviderRegistry::Discovered& found : registry.discover()) {
    if (!found.provider) {
      inventory.skipped.push_back({found.path, "not loaded: " + found.load_status.message(), 0});
      continue;
    }
    const std::shared_ptr<Provider>& provider = found.provider;
    Status available = provider->availability();
    if (available.ok() && provider->device_count() == 0) available = unavailable("it reports no devices");
    FoundDevice best{provider, 0, ONYX_DEVICE_CPU};
    uint64_t best_free = 0;
    bool any = false;
    for (size_t d = 0; available.ok() && d < provider->device_count(); ++d) {
      auto props = provider->device_properties(d);
      if (!props.ok()) {
        available = props.status();
        break;
      }
      if (!any || props->free_memory_bytes > best_free) {
        best = {provider, d, props->kind};
        best_free = props->free_memory_bytes;
        any = true;
      }
    }
    if (!available.ok()) {
      inventory.skipped.push_back({provider->name(), available.message(), 0});
      continue;
    }
    inventory.devices.push_back(best);
  }
  return inventory;
}

ProviderRequest request_for(const FoundDevice& device) {
  return {device.provider->path(), {{kDeviceOption, std::to_string(device.index)}}};
}

std::string label_of(const FoundDevice& device) {
  return device.provider->name() + (device.index ? ":" + std::to_string(device.index) : "");
}

// The zero-filled inputs a measuring run feeds, from the declared shapes.
StatusOr<std::vector<std::pair<std::string, Tensor>>> measuring_inputs(const ir::Graph& graph, std::string* note) {
  std::vector<std::pair<std::string, Tensor>> inputs;
  for (int v : graph.inputs) {
    const ir::Value& value = graph.values[size_t(v)];
    if (value.constant) continue;  // an initializer: its own value
    const std::string why = "the fastest device policy times runs on inputs made from the model's declared shapes, "
                            "but input '" + value.name + "' ";
    if (value.kind != ir::ValueKind::kTensor || value.dtype == ONYX_DTYPE_STRING ||
        value.dtype == ONYX_DTYPE_UNDEFINED)
      return invalid_argument(why + "is not a numeric tensor; name the providers instead");
    if (value.rank < 0) return invalid_argument(why + "has an unknown rank; name the providers instead");
    Shape shape(value.dims.begin(), value.dims.end());
    bool symbolic = false;
    for (int64_t& d : shape)
      if (d < 0) {
        d = 1;
        symbolic = true;
      }
    if (symbolic) *note += (note->empty() ? "measured with the symbolic dims of " : ", ") + ("'" + value.name + "'");
    try {
      inputs.emplace_back(value.name, Tensor::allocate(value.dtype, shape));
    } catch (const std::exception& e) {
      return invalid_argument(why + "cannot be allocated: " + e.what());
    }
  }
  if (!note->empty()) *note += " set to 1";
  return inputs;
}

// Median milliseconds of timed runs after one warm-up run.
StatusOr<double> time_runs(Session& session, const std::vector<std::pair<std::string, Tensor>>& inputs) {
  constexpr int kMaxTimedRuns = 5;
  constexpr double kBudgetMs = 2000;  // stop timing a slow candidate early
  using Clock = std::chrono::steady_clock;
  ONYX_RETURN_IF_ERROR(session.run(inputs).status());
  std::vector<double> times;
  double total = 0;
  while (int(times.size()) < kMaxTimedRuns && (times.empty() || total < kBudgetMs)) {
    const Clock::time_point start = Clock::now();
    ONYX_RETURN_IF_ERROR(session.run(inputs).status());
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    total += times.back();
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

ir::Model own_copy(const ir::Model& model) {  // a session rewrites its graph
  ir::Model copy = model;
  copy.graph = std::make_shared<ir::Graph>(*model.graph);
  return copy;
}

}  // namespace

const char* device_policy_name(DevicePolicy policy) {
  switch (policy) {
    case DevicePolicy::kPreferGpu: return "prefer-gpu";
    case DevicePolicy::kPreferCpu: return "prefer-cpu";
    case DevicePolicy::kFastest: return "fastest";
    case DevicePolicy::kNone: break;
  }
  return "none";
}

StatusOr<std::unique_ptr<Session>> create_with_device_policy(ProviderRegistry& registry, const ir::Model& model,
                                                             const SessionOptions& options) {
  if (!options.providers.empty())
    return invalid_argument(std::string("the device policy '") + device_policy_name(options.device_policy) +
                            "' chooses the providers itself: name providers or set a policy, not both");
  Inventory inventory = take_inventory(registry);
  DevicePolicyReport report;
  report.policy = device_policy_name(options.device_policy);
  report.skipped = inventory.skipped;
  const FoundDevice* cpu = nullptr;
  std::vector<const FoundDevice*> accelerated;  // GPUs first, then accelerators
  for (int32_t kind : {ONYX_DEVICE_GPU, ONYX_DEVICE_ACCELERATOR})
    for (const FoundDevice& d : inventory.devices)
      if (d.kind == kind) accelerated.push_back(&d);
  for (const FoundDevice& d : inventory.devices)
    if (d.provider->name() == "cpu") cpu = &d;
  if (!cpu) {
    std::string why;
    for (const UnavailableProvider& u : inventory.skipped) why += "\n  " + u.name + ": " + u.reason;
    return unavailable("the device policy needs the 'cpu' provider as its fallback, and none was found usable in "
                       "the provider search folders" + why);
  }
  SessionOptions chosen = options;
  chosen.device_policy = DevicePolicy::kNone;
  std::vector<std::vector<const FoundDevice*>> candidates;
  if (options.device_policy == DevicePolicy::kPreferGpu) {
    candidates.push_back(accelerated);
    candidates.back().push_back(cpu);
  } else if (options.device_policy == DevicePolicy::kPreferCpu) {
    candidates.push_back({cpu});
  } else {
    for (const FoundDevice* d : accelerated) candidates.push_back({d, cpu});
    candidates.push_back({cpu});
  }
  std::vector<std::pair<std::string, Tensor>> inputs;
  if (options.device_policy == DevicePolicy::kFastest) {
    ONYX_ASSIGN_OR_RETURN(inputs, measuring_inputs(*model.graph, &report.note));
  }

  std::unique_ptr<Session> best;
  double best_ms = 0;
  size_t best_candidate = 0;
  for (const std::vector<const FoundDevice*>& devices : candidates) {
    PolicyCandidate record;
    chosen.providers.clear();
    for (const FoundDevice* d : devices) {
      chosen.providers.push_back(request_for(*d));
      record.devices.push_back(label_of(*d));
    }
    auto session = Session::create(registry, own_copy(model), chosen);
    if (options.device_policy != DevicePolicy::kFastest) {
      if (!session.ok()) return session.status();
      best = std::move(session.value());
      report.candidates.push_back(record);
      break;
    }
    if (session.ok()) {
      auto ms = time_runs(*session.value(), inputs);
      if (ms.ok()) record.median_ms = ms.value();
      else record.error = ms.status().message();
      if (ms.ok() && (!best || ms.value() < best_ms)) {
        best = std::move(session.value());
        best_ms = ms.value();
        best_candidate = report.candidates.size();
      }
    } else {
      record.error = session.status().message();
    }
    report.candidates.push_back(std::move(record));
  }
  if (!best) {
    std::string why;
    for (const PolicyCandidate& c : report.candidates) {
      std::string names;
      for (const std::string& d : c.devices) names += (names.empty() ? "" : ", ") + d;
      why += "\n  " + names + ": " + c.error;
    }
    return unavailable("the fastest device policy could not run the model on any candidate:" + why);
  }
  for (const auto& device : best->devices()) report.chosen.push_back(device->label);
  std::string line = "device policy " + report.policy + ": chose";
  for (const std::string& d : report.chosen) line += " " + d;
  if (options.device_policy == DevicePolicy::kFastest) {
    line += " (median run";
    for (size_t c = 0; c < report.candidates.size(); ++c) {
      const PolicyCandidate& candidate = report.candidates[c];
      std::string names;
      for (const std::string& d : candidate.devices) names += (names.empty() ? "" : "+") + d;
      line += (c ? ", " : " ") + names + " " +
              (candidate.median_ms >= 0 ? std::to_string(candidate.median_ms) + " ms" : "failed") +
              (c == best_candidate ? " *" : "");
    }
    line += ")";
    if (!report.note.empty()) line += "; " + report.note;
  }
  registry.logger()->log(ONYX_LOG_INFO, line);
  best->set_device_policy_report(std::move(report));
  return best;
}

}  // namespace onyx::runtime
