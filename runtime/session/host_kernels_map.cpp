// host_kernels_map.cpp: the ai.onnx.ml ops that make or read maps, run by
// the host (maps live there: core/value.h):
//   ZipMap         tensor [N, C] (or [C]) -> one map per row, label -> score
//   CastMap        map(int64, string|float) -> tensor [1, N] in key order
//                  (DENSE) or [1, max_map] by key (SPARSE)
//   DictVectorizer map(K, V) -> tensor [1, vocabulary size] of V
// Semantics from the ONNX ML operator spec; the [1, ...] output shape is
// ONNX Runtime's (the spec leaves the leading dim open). Where the spec is
// silent Onyx pads SPARSE CastMap and DictVectorizer with zero or "".
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "core/string_tensor.h"
#include "session/host_kernels.h"

namespace onyx::runtime {
namespace {

StatusOr<Value> map_input(const HostKernelCall& call, size_t k) {
  if (k >= call.inputs.size() || call.inputs[k].kind() != Value::Kind::kMap)
    return invalid_argument(call.name + ": input " + std::to_string(k) + " must be a map, got a " +
                            (k < call.inputs.size() ? call.inputs[k].describe() : std::string("missing value")));
  return call.inputs[k];
}

// ZipMap: classlabels_strings or classlabels_int64s name the C columns.
Status zip_map(HostKernelCall& call) {
  ONYX_ASSIGN_OR_RETURN(Tensor x, call.tensor(0));
  const ir::Attribute* strings = call.node.attr("classlabels_strings");
  const ir::Attribute* ints = call.node.attr("classlabels_int64s");
  if (!strings == !ints)
    return invalid_argument(call.name + ": exactly one of classlabels_strings and classlabels_int64s is required");
  const int64_t labels = strings ? int64_t(strings->strings.size()) : int64_t(ints->ints.size());
  if (x.dtype() != ONYX_DTYPE_FLOAT32)
    return invalid_argument(call.name + ": X must be float32, got " + dtype_name(x.dtype()));
  const Shape& dims = x.shape();
  if (dims.empty() || dims.size() > 2 || dims.back() != labels)
    return invalid_argument(call.name + ": X " + shape_string(dims) + " must be [N, " + std::to_string(labels) +
                            "] or [" + std::to_string(labels) + "], one column per class label");
  if (strings) {
    std::set<std::string> seen(strings->strings.begin(), strings->strings.end());
    if (seen.size() != strings->strings.size()) return invalid_argument(call.name + ": a class label appears twice");
  } else {
    std::set<int64_t> seen(ints->ints.begin(), ints->ints.end());
    if (seen.size() != ints->ints.size()) return invalid_argument(call.name + ": a class label appears twice");
  }
  Tensor keys;
  if (strings) {
    keys = make_string_tensor({labels}, strings->strings);
  } else {
    keys = Tensor::allocate(ONYX_DTYPE_INT64, {labels});
    std::copy(ints->ints.begin(), ints->ints.end(), keys.data_as<int64_t>());
  }
  const int64_t rows = dims.size() == 2 ? dims[0] : 1;
  std::vector<Value> maps;
  for (int64_t n = 0; n < rows; ++n) {
    Tensor scores = Tensor::allocate(ONYX_DTYPE_FLOAT32, {labels});
    std::copy_n(x.data_as<float>() + n * labels, labels, scores.data_as<float>());
    ONYX_ASSIGN_OR_RETURN(Value map, Value::map(keys, std::move(scores)));
    maps.push_back(std::move(map));
  }
  ONYX_ASSIGN_OR_RETURN(call.outputs[0], Value::sequence(ONYX_DTYPE_UNDEFINED, std::move(maps)));
  return Status();
}

// One map value as text, a float or an int64 (CastMap's conversions).
std::string as_string(const Tensor& values, int64_t i) {
  if (values.dtype() == ONYX_DTYPE_STRING) return strings_of(values)[size_t(i)];
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, values.data_as<float>()[i]);  // shortest round-trip form
  return std::string(buf, r.ptr);
}

StatusOr<double> as_number(const Tensor& values, int64_t i, const std::string& where) {
  if (values.dtype() != ONYX_DTYPE_STRING) return double(values.data_as<float>()[i]);
  const std::string& s = strings_of(values)[size_t(i)];
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size())
    return invalid_argument(where + ": value '" + s + "' is not a number");
  return v;
}

Status cast_map(HostKernelCall& call) {
  ONYX_ASSIGN_OR_RETURN(Value map, map_input(call, 0));
  const Tensor& keys = map.map_keys();
  const Tensor& values = map.map_values();
  if (keys.dtype() != ONYX_DTYPE_INT64 || (values.dtype() != ONYX_DTYPE_STRING && values.dtype() != ONYX_DTYPE_FLOAT32))
    return invalid_argument(call.name + ": the map must be map(int64, string) or map(int64, float), got a " +
                            map.describe());
  const ir::Attribute* cast_attr = call.node.attr("cast_to");
  const ir::Attribute* form_attr = call.node.attr("map_form");
  const std::string cast_to = cast_attr ? cast_attr->s : "TO_FLOAT";
  const std::string form = form_attr ? form_attr->s : "DENSE";
  const int32_t dtype = cast_to == "TO_FLOAT"    ? ONYX_DTYPE_FLOAT32
                        : cast_to == "TO_INT64"  ? ONYX_DTYPE_INT64
                        : cast_to == "TO_STRING" ? ONYX_DTYPE_STRING
                                                 : ONYX_DTYPE_UNDEFINED;
  if (dtype == ONYX_DTYPE_UNDEFINED)
    return invalid_argument(call.name + ": cast_to '" + cast_to + "' is not TO_FLOAT, TO_INT64 or TO_STRING");
  if (form != "DENSE" && form != "SPARSE")
    return invalid_argument(call.name + ": map_form '" + form + "' is not DENSE or SPARSE");
  const bool sparse = form == "SPARSE";
  const int64_t max_map = call.node.attr_int("max_map", 1);
  if (sparse && (max_map < 1 || max_map > (int64_t(1) << 31)))
    return invalid_argument(call.name + ": max_map " + std::to_string(max_map) + " must be in [1, 2^31]");
  std::vector<int64_t> order(size_t(keys.size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
  const int64_t* k = keys.data_as<int64_t>();
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return k[a] < k[b]; });
  const int64_t width = sparse ? max_map : keys.size();
  std::vector<std::string> strings(dtype == ONYX_DTYPE_STRING ? size_t(width) : 0);
  Tensor out = dtype == ONYX_DTYPE_STRING ? Tensor() : Tensor::allocate(dtype, {1, width});
  for (size_t j = 0; j < order.size(); ++j) {
    const int64_t i = order[j];
    int64_t slot = int64_t(j);
    if (sparse) {
      if (k[i] < 0 || k[i] >= max_map)
        return invalid_argument(call.name + ": key " + std::to_string(k[i]) + " is outside [0, max_map = " +
                                std::to_string(max_map) + ") of the SPARSE form");
      slot = k[i];
    }
    const std::string where = call.name + " key " + std::to_string(k[i]);
    if (dtype == ONYX_DTYPE_STRING) {
      strings[size_t(slot)] = as_string(values, i);
    } else {
      ONYX_ASSIGN_OR_RETURN(double v, as_number(values, i, where));
      if (dtype == ONYX_DTYPE_FLOAT32) out.data_as<float>()[slot] = float(v);
      else if (std::isfinite(v) && std::abs(v) < 9.2e18) out.data_as<int64_t>()[slot] = int64_t(v);
      else return invalid_argument(where + ": value does not fit int64");
    }
  }
  call.outputs[0] = dtype == ONYX_DTYPE_STRING ? make_string_tensor({1, width}, std::move(strings)) : out;
  return Status();
}

Status dict_vectorizer(HostKernelCall& call) {
  ONYX_ASSIGN_OR_RETURN(Value map, map_input(call, 0));
  const Tensor& keys = map.map_keys();
  const Tensor& values = map.map_values();
  const ir::Attribute* strings = call.node.attr("string_vocabulary");
  const ir::Attribute* ints = call.node.attr("int64_vocabulary");
  if (!strings == !ints)
    return invalid_argument(call.name + ": exactly one of string_vocabulary and int64_vocabulary is required");
  if ((strings != nullptr) != (keys.dtype() == ONYX_DTYPE_STRING))
    return invalid_argument(call.name + ": a " + std::string(strings ? "string" : "int64") +
                            " vocabulary cannot read a " + map.describe());
  const int64_t width = strings ? int64_t(strings->strings.size()) : int64_t(ints->ints.size());
  // Vocabulary position of each key (the first, if the vocabulary repeats one).
  std::map<std::string, int64_t> by_string;
  std::map<int64_t, int64_t> by_int;
  for (int64_t p = width; p-- > 0;) {
    if (strings) by_string[strings->strings[size_t(p)]] = p;
    else by_int[ints->ints[size_t(p)]] = p;
  }
  const int32_t dtype = values.dtype();
  std::vector<std::string> texts(dtype == ONYX_DTYPE_STRING ? size_t(width) : 0);
  Tensor out = dtype == ONYX_DTYPE_STRING ? Tensor() : Tensor::allocate(dtype, {1, width});
  for (int64_t i = 0; i < keys.size(); ++i) {
    int64_t slot = -1;
    if (strings) {
      auto it = by_string.find(strings_of(keys)[size_t(i)]);
      if (it != by_string.end()) slot = it->second;
    } else {
      auto it = by_int.find(keys.data_as<int64_t>()[i]);
      if (it != by_int.end()) slot = it->second;
    }
    if (slot < 0) continue;  // keys outside the vocabulary are dropped
    switch (dtype) {
      case ONYX_DTYPE_STRING: texts[size_t(slot)] = strings_of(values)[size_t(i)]; break;
      case ONYX_DTYPE_FLOAT32: out.data_as<float>()[slot] = values.data_as<float>()[i]; break;
      case ONYX_DTYPE_FLOAT64: out.data_as<double>()[slot] = values.data_as<double>()[i]; break;
      default: out.data_as<int64_t>()[slot] = values.data_as<int64_t>()[i]; break;
    }
  }
  call.outputs[0] = dtype == ONYX_DTYPE_STRING ? make_string_tensor({1, width}, std::move(texts)) : out;
  return Status();
}

}  // namespace

std::vector<HostKernelEntry> map_host_kernels() {
  return {{"ai.onnx.ml::ZipMap", zip_map},
          {"ai.onnx.ml::CastMap", cast_map},
          {"ai.onnx.ml::DictVectorizer", dict_vectorizer}};
}

}  // namespace onyx::runtime
