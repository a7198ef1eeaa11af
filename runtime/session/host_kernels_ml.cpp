// host_kernels_ml.cpp: ai.onnx.ml ops on STRING tensors, run by the host:
// LabelEncoder (opsets 1-4) with string keys or values, as the spec
// defines it.
#include <cmath>
#include <map>

#include "core/string_tensor.h"
#include "session/host_kernels.h"

namespace onyx::runtime {
namespace {

// One key or value of a LabelEncoder: a string, an integer or a float,
// ordered within its type (floats: NaN equals NaN, as the spec asks).
struct Cell {
  int32_t dtype = ONYX_DTYPE_UNDEFINED;
  std::string s;
  int64_t i = 0;
  double f = 0;
  bool operator<(const Cell& o) const {
    if (dtype != o.dtype) return dtype < o.dtype;
    if (dtype == ONYX_DTYPE_STRING) return s < o.s;
    if (dtype == ONYX_DTYPE_FLOAT32 || dtype == ONYX_DTYPE_FLOAT64) {
      if (std::isnan(f) || std::isnan(o.f)) return !std::isnan(f) && std::isnan(o.f);
      return f < o.f;
    }
    return i < o.i;
  }
};

bool is_float(int32_t dtype) { return dtype == ONYX_DTYPE_FLOAT32 || dtype == ONYX_DTYPE_FLOAT64; }

// Element k of a string, integer or float tensor as a Cell (keys compare
// as their kind: int32 and int64 keys are integers, float/double floats).
StatusOr<Cell> cell_at(const Tensor& t, int64_t k, const std::string& what) {
  Cell c;
  switch (t.dtype()) {
    case ONYX_DTYPE_STRING: c.dtype = ONYX_DTYPE_STRING, c.s = strings_of(t)[size_t(k)]; return c;
    case ONYX_DTYPE_INT64: c.dtype = ONYX_DTYPE_INT64, c.i = t.data_as<int64_t>()[k]; return c;
    case ONYX_DTYPE_INT32: c.dtype = ONYX_DTYPE_INT64, c.i = t.data_as<int32_t>()[k]; return c;
    case ONYX_DTYPE_INT16: c.dtype = ONYX_DTYPE_INT64, c.i = t.data_as<int16_t>()[k]; return c;
    case ONYX_DTYPE_FLOAT32: c.dtype = ONYX_DTYPE_FLOAT32, c.f = t.data_as<float>()[k]; return c;
    case ONYX_DTYPE_FLOAT64: c.dtype = ONYX_DTYPE_FLOAT32, c.f = t.data_as<double>()[k]; return c;
    default: return unimplemented(what + ": " + dtype_name(t.dtype()) + " keys or values are not supported");
  }
}

// The keys or values: from `prefix`_strings / _int64s / _floats or
// `prefix`_tensor, with the element type they give the output.
struct Column {
  int32_t dtype = ONYX_DTYPE_UNDEFINED;  // the output's type, for values
  std::vector<Cell> cells;
};

StatusOr<Column> column(const ir::Node& node, const std::string& prefix, const std::string& what) {
  Column c;
  if (const ir::Attribute* a = node.attr(prefix + "_strings")) {
    c.dtype = ONYX_DTYPE_STRING;
    for (const std::string& s : a->strings) c.cells.push_back({ONYX_DTYPE_STRING, s, 0, 0});
  } else if (const ir::Attribute* b = node.attr(prefix + "_int64s")) {
    c.dtype = ONYX_DTYPE_INT64;
    for (int64_t v : b->ints) c.cells.push_back({ONYX_DTYPE_INT64, {}, v, 0});
  } else if (const ir::Attribute* f = node.attr(prefix + "_floats")) {
    c.dtype = ONYX_DTYPE_FLOAT32;
    for (float v : f->floats) c.cells.push_back({ONYX_DTYPE_FLOAT32, {}, 0, v});
  } else if (const ir::Attribute* t = node.attr(prefix + "_tensor")) {
    c.dtype = t->t.dtype();
    for (int64_t k = 0; k < t->t.size(); ++k) {
      ONYX_ASSIGN_OR_RETURN(Cell cell, cell_at(t->t, k, what));
      c.cells.push_back(std::move(cell));
    }
  } else {
    return invalid_argument(what + ": no " + prefix + "_strings, " + prefix + "_int64s, " + prefix + "_floats or " +
                            prefix + "_tensor attribute");
  }
  return c;
}

// The value for keys not found: default_tensor, or the default of the
// values' type (default_string "_Unused", default_int64 -1, default_float -0.0).
StatusOr<Cell> default_value(const ir::Node& node, int32_t dtype, const std::string& what) {
  if (const ir::Attribute* t = node.attr("default_tensor")) {
    if (t->t.size() != 1) return invalid_argument(what + ": default_tensor must hold one value");
    return cell_at(t->t, 0, what);
  }
  if (dtype == ONYX_DTYPE_STRING) {
    const ir::Attribute* a = node.attr("default_string");
    return Cell{ONYX_DTYPE_STRING, a ? a->s : "_Unused", 0, 0};
  }
  if (is_float(dtype)) {
    const ir::Attribute* a = node.attr("default_float");
    return Cell{ONYX_DTYPE_FLOAT32, {}, 0, a ? double(a->f) : -0.0};
  }
  return Cell{ONYX_DTYPE_INT64, {}, node.attr_int("default_int64", -1), 0};
}

Status store(Tensor& out, int64_t k, const Cell& v, std::vector<std::string>* strings) {
  switch (out.dtype()) {
    case ONYX_DTYPE_STRING: (*strings)[size_t(k)] = v.s; return Status();
    case ONYX_DTYPE_INT64: out.data_as<int64_t>()[k] = v.i; return Status();
    case ONYX_DTYPE_INT32: out.data_as<int32_t>()[k] = int32_t(v.i); return Status();
    case ONYX_DTYPE_INT16: out.data_as<int16_t>()[k] = int16_t(v.i); return Status();
    case ONYX_DTYPE_FLOAT32: out.data_as<float>()[k] = float(v.f); return Status();
    case ONYX_DTYPE_FLOAT64: out.data_as<double>()[k] = v.f; return Status();
    default: return unimplemented(std::string(dtype_name(out.dtype())) + " values are not supported");
  }
}

Status label_encoder(HostKernelCall& call) {
  ONYX_ASSIGN_OR_RETURN(Tensor x, call.tensor(0));
  ONYX_ASSIGN_OR_RETURN(Column keys, column(call.node, "keys", call.name));
  ONYX_ASSIGN_OR_RETURN(Column values, column(call.node, "values", call.name));
  if (keys.cells.size() != values.cells.size())
    return invalid_argument(call.name + ": " + std::to_string(keys.cells.size()) + " keys but " +
                            std::to_string(values.cells.size()) + " values");
  std::map<Cell, Cell> table;
  for (size_t k = 0; k < keys.cells.size(); ++k)
    if (!table.emplace(keys.cells[k], values.cells[k]).second)
      return invalid_argument(call.name + ": key " + std::to_string(k) + " appears twice in the mapping");
  ONYX_ASSIGN_OR_RETURN(Cell fallback, default_value(call.node, values.dtype, call.name));
  std::vector<std::string> strings(values.dtype == ONYX_DTYPE_STRING ? size_t(x.size()) : 0);
  // String values are gathered in `strings`, then made the output's.
  Tensor out = values.dtype == ONYX_DTYPE_STRING ? make_string_tensor(x.shape(), {})
                                                 : Tensor::allocate(values.dtype, x.shape());
  for (int64_t k = 0; k < x.size(); ++k) {
    ONYX_ASSIGN_OR_RETURN(Cell key, cell_at(x, k, call.name));
    auto it = table.find(key);
    ONYX_RETURN_IF_ERROR(store(out, k, it == table.end() ? fallback : it->second, &strings).with_context(call.name));
  }
  if (values.dtype == ONYX_DTYPE_STRING) out = make_string_tensor(x.shape(), std::move(strings));
  call.outputs[0] = out;
  return Status();
}

}  // namespace

std::vector<HostKernelEntry> ml_host_kernels() { return {{"ai.onnx.ml::LabelEncoder", label_encoder}}; }

}  // namespace onyx::runtime
