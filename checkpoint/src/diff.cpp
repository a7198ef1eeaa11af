// diff.cpp: make_nominal() and diff().
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "onyx/checkpoint_tools.h"

namespace onyx::checkpoint {

Checkpoint make_nominal(const Checkpoint& checkpoint) {
  Checkpoint nominal = checkpoint;
  auto drop = [](std::vector<TensorRecord>& list) {
    for (TensorRecord& t : list) {
      t.data = Tensor();
      t.checksum.reset();
    }
  };
  drop(nominal.module.trainable);
  drop(nominal.module.frozen);
  for (OptimizerGroup& g : nominal.optimizer)
    for (ParameterState& p : g.parameters) drop(p.tensors);
  return nominal;
}

namespace {

std::string property_text(const PropertyValue& v) {
  std::ostringstream out;
  out.precision(17);
  if (auto* i = std::get_if<int64_t>(&v)) out << *i << " (int64)";
  if (auto* d = std::get_if<double>(&v)) out << *d << " (double)";
  if (auto* s = std::get_if<std::string>(&v)) out << '"' << *s << "\" (string)";
  return out.str();
}

// Doubles compare bit for bit (NaN equals itself, -0 differs from +0).
bool same_property(const PropertyValue& a, const PropertyValue& b) {
  if (a.index() != b.index()) return false;
  if (a.index() == 1) return std::memcmp(&std::get<double>(a), &std::get<double>(b), sizeof(double)) == 0;
  return a == b;
}

double element_as_double(const TensorRecord& t, size_t k) {
  if (t.dtype == ONYX_DTYPE_FLOAT32) return t.data.data_as<const float>()[k];
  return t.data.data_as<const double>()[k];
}

// Differences between two tensors of the same name, appended to `out`.
void diff_tensor(const TensorRecord& a, const TensorRecord& b, const std::string& where,
                 std::vector<std::string>& out) {
  if (a.dtype != b.dtype || a.shape != b.shape) {
    out.push_back(where + ": " + dtype_name(a.dtype) + " " + shape_string(a.shape) + " vs " +
                  dtype_name(b.dtype) + " " + shape_string(b.shape));
    return;
  }
  if (a.slice != b.slice) out.push_back(where + ": shard slices differ");
  if (a.has_data() != b.has_data()) {
    out.push_back(where + std::string(": data only in ") + (a.has_data() ? "the first" : "the second"));
    return;
  }
  if (!a.has_data() || std::memcmp(a.data.data(), b.data.data(), a.bytes()) == 0) return;
  size_t element = dtype_size(a.dtype);
  if (element == 0) {  // 4-bit types: compare bytes
    out.push_back(where + ": data differs");
    return;
  }
  const auto* pa = static_cast<const unsigned char*>(a.data.data());
  const auto* pb = static_cast<const unsigned char*>(b.data.data());
  size_t count = a.bytes() / element, differing = 0;
  bool real = a.dtype == ONYX_DTYPE_FLOAT32 || a.dtype == ONYX_DTYPE_FLOAT64;
  double max_abs = 0;
  for (size_t k = 0; k < count; ++k) {
    if (std::memcmp(pa + k * element, pb + k * element, element) == 0) continue;
    ++differing;
    if (real) max_abs = std::max(max_abs, std::fabs(element_as_double(a, k) - element_as_double(b, k)));
  }
  std::string line = where + ": " + std::to_string(differing) + " of " + std::to_string(count) + " elements differ";
  if (real) {
    std::ostringstream m;
    m.precision(6);
    m << max_abs;
    line += " (max abs difference " + m.str() + ")";
  }
  out.push_back(line);
}

void diff_lists(const std::vector<TensorRecord>& a, const std::vector<TensorRecord>& b, const std::string& kind,
                std::vector<std::string>& out) {
  auto find = [](const std::vector<TensorRecord>& list, const std::string& name) {
    return std::find_if(list.begin(), list.end(), [&](const TensorRecord& t) { return t.name == name; });
  };
  for (const TensorRecord& t : a) {
    auto other = find(b, t.name);
    if (other == b.end()) out.push_back(kind + " '" + t.name + "': only in the first");
    else diff_tensor(t, *other, kind + " '" + t.name + "'", out);
  }
  for (const TensorRecord& t : b)
    if (find(a, t.name) == a.end()) out.push_back(kind + " '" + t.name + "': only in the second");
  bool same_names = a.size() == b.size() &&
                    std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) { return x.name == y.name; });
  bool same_sets = a.size() == b.size() &&
                   std::all_of(a.begin(), a.end(), [&](const TensorRecord& t) { return find(b, t.name) != b.end(); });
  if (same_sets && !same_names) out.push_back(kind + "s: the same names in a different order");
}

void diff_groups(const Checkpoint& a, const Checkpoint& b, std::vector<std::string>& out) {
  for (const OptimizerGroup& ga : a.optimizer) {
    const OptimizerGroup* gb = b.find_group(ga.name);
    std::string where = "optimizer group '" + ga.name + "'";
    if (!gb) {
      out.push_back(where + ": only in the first");
      continue;
    }
    if (ga.step != gb->step)
      out.push_back(where + ": step " + std::to_string(ga.step) + " vs " + std::to_string(gb->step));
    if (std::memcmp(&ga.initial_learning_rate, &gb->initial_learning_rate, sizeof(double)) != 0)
      out.push_back(where + ": initial learning rate " + property_text(ga.initial_learning_rate) + " vs " +
                    property_text(gb->initial_learning_rate));
    for (const ParameterState& pa : ga.parameters) {
      auto pb = std::find_if(gb->parameters.begin(), gb->parameters.end(),
                             [&](const ParameterState& p) { return p.parameter == pa.parameter; });
      if (pb == gb->parameters.end()) out.push_back(where + " state of '" + pa.parameter + "': only in the first");
      else diff_lists(pa.tensors, pb->tensors, where + " state of '" + pa.parameter + "'", out);
    }
    for (const ParameterState& pb : gb->parameters)
      if (std::none_of(ga.parameters.begin(), ga.parameters.end(),
                       [&](const ParameterState& p) { return p.parameter == pb.parameter; }))
        out.push_back(where + " state of '" + pb.parameter + "': only in the second");
  }
  for (const OptimizerGroup& gb : b.optimizer)
    if (!a.find_group(gb.name)) out.push_back("optimizer group '" + gb.name + "': only in the second");
}

}  // namespace

std::vector<std::string> diff(const Checkpoint& a, const Checkpoint& b) {
  std::vector<std::string> out;
  const Metadata &ma = a.metadata, &mb = b.metadata;
  if (ma.model_identity != mb.model_identity)
    out.push_back("model identity: \"" + ma.model_identity + "\" vs \"" + mb.model_identity + "\"");
  if (ma.shard_index != mb.shard_index || ma.shard_count != mb.shard_count)
    out.push_back("shard: " + std::to_string(ma.shard_index) + " of " + std::to_string(ma.shard_count) + " vs " +
                  std::to_string(mb.shard_index) + " of " + std::to_string(mb.shard_count));
  diff_lists(a.module.trainable, b.module.trainable, "trainable parameter", out);
  diff_lists(a.module.frozen, b.module.frozen, "frozen parameter", out);
  diff_groups(a, b, out);
  for (const auto& [name, value] : a.properties) {
    auto it = b.properties.find(name);
    if (it == b.properties.end()) out.push_back("property '" + name + "': only in the first");
    else if (!same_property(value, it->second))
      out.push_back("property '" + name + "': " + property_text(value) + " vs " + property_text(it->second));
  }
  for (const auto& [name, value] : b.properties)
    if (!a.properties.count(name)) out.push_back("property '" + name + "': only in the second");
  return out;
}

}  // namespace onyx::checkpoint
