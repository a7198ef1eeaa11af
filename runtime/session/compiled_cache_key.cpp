#include "session/compiled_cache_key.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "session/device.h"

namespace onyx::runtime {

namespace {

constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ull;

uint64_t finish(uint64_t h) {  // splitmix64's finalizer
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

// Bounded: a plugin's string is read up to this many bytes.
constexpr size_t kMaxCompatibilityBytes = 4096;

// Bytes as text the key can hold on one line: printable ASCII as is, the
// rest (and '\\') escaped.
std::string escaped(const char* data, size_t size) {
  std::string out;
  for (size_t k = 0; k < size; ++k) {
    const unsigned char c = static_cast<unsigned char>(data[k]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
  }
  return out;
}
std::string escaped(const char* text) { return text ? escaped(text, std::strlen(text)) : std::string(); }

std::string exact(double v) {  // hexadecimal: the value itself, not a rounding of it
  char text[64];
  std::snprintf(text, sizeof text, "%a", v);
  return text;
}

std::string dims_text(const int64_t* dims, int64_t rank) {
  if (rank < 0) return "[?]";
  std::string out = "[";
  for (int64_t d = 0; d < rank; ++d) out += (d ? "," : "") + std::to_string(dims[d]);
  return out + "]";
}

// "<dtype> <dims> bytes <n> hash <h>" for a host tensor, or nullopt when its
// bytes cannot be read here.
std::optional<std::string> tensor_text(const OnyxTensorView& t) {
  if (t.memory_kind == ONYX_MEMORY_DEVICE) return std::nullopt;
  uint64_t elements = 1;
  for (size_t d = 0; d < t.rank; ++d) elements *= uint64_t(std::max<int64_t>(t.dims[d], 0));
  const size_t bytes = onyx_dtype_storage_bytes(t.dtype, elements);
  if (bytes && !t.data) return std::nullopt;
  char hash[40];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, hash_bytes(t.data, bytes));
  return "dtype " + std::to_string(t.dtype) + " " + dims_text(t.dims, int64_t(t.rank)) + " bytes " +
         std::to_string(bytes) + " hash " + hash;
}

std::optional<std::string> attribute_text(const OnyxAttribute& a) {
  std::string out = "  attr " + escaped(a.name) + " type " + std::to_string(a.type) + " =";
  switch (a.type) {
    case ONYX_ATTR_FLOAT: return out + " " + exact(a.f);
    case ONYX_ATTR_INT: return out + " " + std::to_string(a.i);
    case ONYX_ATTR_STRING: return out + " " + std::to_string(a.s_len) + ":" + escaped(a.s, a.s ? a.s_len : 0);
    case ONYX_ATTR_FLOATS:
      for (size_t k = 0; k < a.count; ++k) out += " " + exact(a.floats[k]);
      return out;
    case ONYX_ATTR_INTS:
      for (size_t k = 0; k < a.count; ++k) out += " " + std::to_string(a.ints[k]);
      return out;
    case ONYX_ATTR_STRINGS:
      for (size_t k = 0; k < a.count; ++k) {
        const std::string s = escaped(a.strings[k]);
        out += " " + std::to_string(s.size()) + ":" + s;
      }
      return out;
    case ONYX_ATTR_TENSOR: {
      if (!a.tensor) return std::nullopt;
      std::optional<std::string> t = tensor_text(*a.tensor);
      return t ? std::optional<std::string>(out + " " + *t) : std::nullopt;
    }
    default: return std::nullopt;  // a subgraph: what a plugin compiles from it is not keyed
  }
}

}  // namespace

uint64_t hash_bytes(const void* data, size_t size) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = uint64_t(size) * kMultiplier;
  size_t k = 0;
  for (; k + 8 <= size; k += 8) {
    uint64_t word;
    std::memcpy(&word, p + k, 8);
    const uint64_t x = h ^ (word * kMultiplier);
    h = ((x << 31) | (x >> 33)) * 0xBF58476D1CE4E5B9ull;
  }
  uint64_t tail = 0;
  for (size_t shift = 0; k < size; ++k, shift += 8) tail |= uint64_t(p[k]) << shift;
  return finish(h ^ tail);
}

std::optional<CompiledCacheKey> compiled_cache_key(const Device& device, const OnyxGraphView& view,
                                                   std::span<const uint32_t> nodes) {
  const Provider& provider = *device.provider;
  const OnyxDeviceProperties& props = device.properties;
  // Two parts: `key` names the entry's place (plugin, device, options,
  // group); `versions` what a plugin or driver update changes.
  std::string key = "onyx compiled kernel key 1\nplugin " + escaped(provider.name().c_str()) + "\n";
  std::string versions = "version " + escaped(provider.version().c_str()) + " abi " +
                         std::to_string(ONYX_ABI_VERSION_GET_MAJOR(provider.abi_version())) + "." +
                         std::to_string(ONYX_ABI_VERSION_GET_MINOR(provider.abi_version())) + "\n";
  key += "device " + escaped(props.name, strnlen(props.name, sizeof props.name)) + " | " +
         escaped(props.vendor, strnlen(props.vendor, sizeof props.vendor)) + " | kind " + std::to_string(props.kind) +
         " | memory " + std::to_string(props.memory_bytes) + " | async " + std::to_string(int(props.asynchronous)) +
         "\n";
  std::vector<std::pair<std::string, std::string>> options = device.open_options;
  std::stable_sort(options.begin(), options.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [k, v] : options) key += "option " + escaped(k.c_str()) + "=" + escaped(v.c_str()) + "\n";
  const char* compatibility = provider.api().device_cache_compatibility(device.handle);
  versions += "compatibility " +
              (compatibility ? escaped(compatibility, strnlen(compatibility, kMaxCompatibilityBytes)) : std::string()) +
              "\n";

  std::map<int32_t, size_t> numbers;  // value index -> number in order of first use
  std::vector<int32_t> used;
  auto ref = [&](int32_t v) -> std::string {
    if (v < 0 || size_t(v) >= view.value_count) return "none";
    auto [it, fresh] = numbers.emplace(v, numbers.size());
    if (fresh) used.push_back(v);
    return "v" + std::to_string(it->second);
  };
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (nodes[k] >= view.node_count) return std::nullopt;
    const OnyxNodeView& node = view.nodes[nodes[k]];
    key += "node " + std::to_string(k) + " " + escaped(node.domain) + "::" + escaped(node.op_type) + " opset " +
           std::to_string(node.opset_version) + "\n";
    for (size_t a = 0; a < node.attribute_count; ++a) {
      std::optional<std::string> text = attribute_text(node.attributes[a]);
      if (!text) return std::nullopt;
      key += *text + "\n";
    }
    for (size_t i = 0; i < node.input_count; ++i) key += "  in " + ref(node.inputs[i]) + "\n";
    for (size_t o = 0; o < node.output_count; ++o) key += "  out " + ref(node.outputs[o]) + "\n";
  }
  for (int32_t v : used) {
    const OnyxValueInfo& value = view.values[size_t(v)];
    key += "value v" + std::to_string(numbers[v]) + " dtype " + std::to_string(value.dtype) + " shape " +
           dims_text(value.dims, value.rank) + " flags " + std::to_string(value.flags);
    if ((value.flags & ONYX_VALUE_CONSTANT) && value.constant) {
      std::optional<std::string> t = tensor_text(*value.constant);
      if (!t) return std::nullopt;
      key += " constant " + *t;
    }
    key += "\n";
  }
  CompiledCacheKey out;
  out.file_hash = hash_bytes(key.data(), key.size());
  const size_t after_plugin = key.find('\n', key.find("\nplugin ") + 1) + 1;
  out.text = key.substr(0, after_plugin) + versions + key.substr(after_plugin);
  return out;
}

}  // namespace onyx::runtime
