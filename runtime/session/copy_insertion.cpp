#include "session/copy_insertion.h"

#include <map>

namespace onyx::runtime {

CopyInsertion insert_copies(ir::Graph& graph, const DeviceList& devices, std::vector<Step> steps) {
  CopyInsertion result;
  auto label = [&](int d) { return d < 0 ? std::string("host") : devices[size_t(d)]->label; };
  // Where each value's bytes are: -1 = host memory (inputs, constants).
  std::vector<int> location(graph.values.size(), -1);
  std::map<std::pair<int, int>, int> copied;  // (value, device) -> its copy
  // One copy step of `v` (the bytes of model value `original`) from `from`
  // to `to`, not both devices the host cannot read.
  auto add_copy = [&](int v, int original, int from, int to, const std::string& why) -> int {
    ir::Value value;
    value.name = graph.values[size_t(original)].name + "@" + label(to);
    value.dtype = graph.values[size_t(v)].dtype;
    value.rank = graph.values[size_t(v)].rank;
    value.dims = graph.values[size_t(v)].dims;
    const int c = graph.add_value(value);
    location.push_back(to);
    Step step;
    step.kind = Step::kCopy;
    // memory_copy moves bytes within one device and the host, so the device
    // that cannot read host memory does it: the destination's for
    // host-readable memory (the host's, the CPU provider's) to it, the
    // source's from it into host-readable memory.
    const bool to_device = !host_readable(devices, to);
    step.copy_by = to_device ? to : from;
    step.device = to >= 0 ? to : from;
    step.copy_direction = to_device ? ONYX_COPY_HOST_TO_DEVICE : ONYX_COPY_DEVICE_TO_HOST;
    step.inputs = {v};
    step.outputs = {c};
    step.name = "copy '" + graph.values[size_t(original)].name + "'";
    result.steps.push_back(std::move(step));
    result.copies.push_back({graph.values[size_t(original)].name, label(from), label(to), why});
    copied[{original, to}] = c;
    return c;
  };
  auto copy_to = [&](int v, int to, const std::string& why) -> int {
    const int from = location[size_t(v)];
    if (from == to || (host_readable(devices, from) && host_readable(devices, to))) return v;
    if (auto it = copied.find({v, to}); it != copied.end()) return it->second;
    // Between two devices that cannot read host memory: staged through it.
    if (!host_readable(devices, from) && !host_readable(devices, to)) {
      auto staged = copied.find({v, -1});
      const int on_host = staged != copied.end() ? staged->second
                                                 : add_copy(v, v, from, -1, why + " (staged through host memory)");
      return add_copy(on_host, v, -1, to, why);
    }
    return add_copy(v, v, from, to, why);
  };
  result.steps.reserve(steps.size());  // one more per copy: rare, and then few
  for (Step& step : steps) {
    for (int& v : step.inputs)
      if (v >= 0) v = copy_to(v, step.device, "read by " + step.name);
    for (int v : step.outputs)
      if (v >= 0) location[size_t(v)] = step.device;
    result.steps.push_back(std::move(step));
  }
  for (int v : graph.outputs) result.output_values.push_back(copy_to(v, -1, "graph output"));
  return result;
}

}  // namespace onyx::runtime
