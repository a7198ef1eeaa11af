// host_kernels_sequence.cpp: SequenceEmpty, SequenceConstruct,
// SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
// SplitToSequence, ConcatFromSequence, and Identity on sequences and
// optionals, as the ONNX operator spec defines them.
#include <cstring>

#include "session/host_kernels.h"

namespace onyx::runtime {
namespace {

int64_t product(const Shape& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t k = begin; k < end; ++k) p *= dims[k];
  return p;
}

// Bytes per element of a tensor that is cut or joined along an axis.
StatusOr<size_t> element_bytes(int32_t dtype, const std::string& what) {
  size_t size = dtype_size(dtype);
  if (size == 0) return unimplemented(what + ": cutting or joining " + std::string(dtype_name(dtype)) + " tensors is not supported");
  return size;
}

// `axis` of a tensor of `rank` (negative counts from the end), checked.
StatusOr<size_t> normalize_axis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank)
    return invalid_argument(what + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return size_t(axis < 0 ? axis + rank : axis);
}

// A position into a sequence of `count` items, in [-count, count - 1]
// (or [-count, count] when `end_allowed`, for SequenceInsert).
StatusOr<size_t> normalize_position(int64_t p, size_t count, bool end_allowed, const std::string& what) {
  const int64_t n = int64_t(count), hi = end_allowed ? n : n - 1;
  if (p < -n || p > hi)
    return invalid_argument(what + ": position " + std::to_string(p) + " is out of range for a sequence of " +
                            std::to_string(count) + " items");
  return size_t(p < 0 ? p + n : p);
}

// Elements [begin, end) of `t` along `axis`; `drop_axis` (end == begin + 1
// only) leaves the axis out of the result's shape.
Tensor slice(const Tensor& t, size_t axis, int64_t begin, int64_t end, size_t esize, bool drop_axis) {
  const Shape& dims = t.shape();
  Shape out_dims = dims;
  out_dims[axis] = end - begin;
  if (drop_axis) out_dims.erase(out_dims.begin() + long(axis));
  Tensor out = Tensor::allocate(t.dtype(), out_dims);
  const int64_t outer = product(dims, 0, axis);
  const size_t inner = size_t(product(dims, axis + 1, dims.size())) * esize;
  const size_t block = size_t(dims[axis]) * inner, piece = size_t(end - begin) * inner;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(out.data()) + size_t(o) * piece,
                static_cast<const char*>(t.data()) + size_t(o) * block + size_t(begin) * inner, piece);
  return out;
}

Status sequence_empty(HostKernelCall& call) {
  const int32_t dtype = int32_t(call.node.attr_int("dtype", ONYX_DTYPE_FLOAT32));
  ONYX_ASSIGN_OR_RETURN(call.outputs[0], Value::sequence(dtype, {}));
  return Status();
}

Status sequence_construct(HostKernelCall& call) {
  std::vector<Value> items;
  for (size_t k = 0; k < call.inputs.size(); ++k) {
    ONYX_ASSIGN_OR_RETURN(Tensor t, call.tensor(k));
    items.push_back(t);
  }
  auto seq = Value::sequence(ONYX_DTYPE_UNDEFINED, std::move(items));
  if (!seq.ok()) return seq.status().with_context(call.name);
  call.outputs[0] = std::move(seq).value();
  return Status();
}

Status sequence_insert(HostKernelCall& call) {
  ONYX_ASSIGN_OR_RETURN(Value seq, call.sequence(0));
  ONYX_ASSIGN_OR_RETURN(Tensor t, call.tensor(1));
  std::vector<Value> items = seq.items();
  size_t at = items.size();
  if (call.inputs.size() > 2 && !(call.inputs[2].is_tensor() && call.inputs[2].tensor().empty())) {
    ONYX_ASSIGN_OR_RETURN(int64_t p, call.scalar_int(2));
    ONYX_ASSIGN_OR_RETURN(at, normalize_position(p, items.size(), true, call.name));
  }
  items.insert(items.begin() + long(at), t);
  auto out = Value::sequence(seq.elem_dtype(), std::move(items));
  if (!out.ok()) return out.status().with_context(call.name);
  call.outputs[0] = std::move(out).value();
  return Status();
}

Status sequence_at(HostKernelCall& call) {
  ONYX_ASSIGN_OR_RETURN(Value seq, call.sequence(0));
  ONYX_ASSIGN_OR_RETURN(int64_t p, call.scalar_int(1));
  ONYX_ASSIGN_OR_RETURN(size_t at, normalize_position(p, seq.items().size(), false, call.name));
  call.outputs[0] = seq.items()[at];
  return Status();
}

Status sequence_erase(HostKernelCall& call) {
  ONYX_ASSIGN_OR_RETURN(Value seq, call.sequence(0));
  std::vector<Value> items = seq.items();
  if (items.empty()) return invalid_argument(call.name + ": cannot erase from an empty sequence");
  size_t at = items.size() - 1;
  if (call.inputs.size() > 1 && !(call.inputs[1].is_tensor() && call.inputs[1].tensor().empty())) {
    ONYX_ASSIGN_OR_RETURN(int64_t p, call.scalar_int(1));
    ONYX_ASSIGN_OR_RETURN(at, normalize_position(p, items.size(), false, call.name));
  }
  items.erase(items.begin() + long(at));
  ONYX_ASSIGN_OR_RETURN(call.outputs[0], Value::sequence(seq.elem_dtype(), std::move(items)));
  return Status();
}

Status sequence_length(HostKernelCall& call) {
  ONYX_ASSIGN_OR_RETURN(Value seq, call.sequence(0));
  Tensor n = Tensor::allocate(ONYX_DTYPE_INT64, {});
  *n.data_as<int64_t>() = int64_t(seq.items().size());
  call.outputs[0] = n;
  return Status();
}

Status split_to_sequence(HostKernelCall& call) {
  ONYX_ASSIGN_OR_RETURN(Tensor x, call.tensor(0));
  const int64_t rank = int64_t(x.shape().size());
  ONYX_ASSIGN_OR_RETURN(size_t axis, normalize_axis(call.node.attr_int("axis", 0), rank, call.name));
  ONYX_ASSIGN_OR_RETURN(size_t esize, element_bytes(x.dtype(), call.name));
  const int64_t length = x.shape()[axis];
  std::vector<int64_t> sizes;
  const bool split_given = call.inputs.size() > 1 && !(call.inputs[1].is_tensor() && call.inputs[1].tensor().empty());
  if (!split_given) {
    sizes.assign(size_t(length), 1);
  } else {
    ONYX_ASSIGN_OR_RETURN(Tensor split, call.tensor(1));
    if (split.dtype() != ONYX_DTYPE_INT64 && split.dtype() != ONYX_DTYPE_INT32)
      return invalid_argument(call.name + ": split must be int32 or int64");
    auto at = [&](int64_t i) {
      return split.dtype() == ONYX_DTYPE_INT64 ? split.data_as<int64_t>()[i] : int64_t(split.data_as<int32_t>()[i]);
    };
    if (split.shape().empty()) {  // one chunk size; the last chunk may be smaller
      const int64_t chunk = at(0);
      if (chunk <= 0) return invalid_argument(call.name + ": split must be positive, got " + std::to_string(chunk));
      for (int64_t done = 0; done < length; done += chunk) sizes.push_back(std::min(chunk, length - done));
    } else {
      int64_t total = 0;
      for (int64_t i = 0; i < split.size(); ++i) {
        if (at(i) < 0) return invalid_argument(call.name + ": split lengths must not be negative");
        sizes.push_back(at(i));
        total += at(i);
      }
      if (total != length)
        return invalid_argument(call.name + ": split lengths sum to " + std::to_string(total) + ", the axis has " +
                                std::to_string(length));
    }
  }
  const bool squeeze = !split_given && call.node.attr_int("keepdims", 1) == 0;
  std::vector<Value> items;
  int64_t begin = 0;
  for (int64_t size : sizes) {
    items.push_back(slice(x, axis, begin, begin + size, esize, squeeze));
    begin += size;
  }
  ONYX_ASSIGN_OR_RETURN(call.outputs[0], Value::sequence(x.dtype(), std::move(items)));
  return Status();
}

Status concat_from_sequence(HostKernelCall& call) {
  ONYX_ASSIGN_OR_RETURN(Value seq, call.sequence(0));
  const std::vector<Value>& items = seq.items();
  if (items.empty()) return invalid_argument(call.name + ": the sequence is empty");
  const bool new_axis = call.node.attr_int("new_axis", 0) != 0;
  const Tensor& first = items[0].tensor();
  const int64_t out_rank = int64_t(first.shape().size()) + (new_axis ? 1 : 0);
  ONYX_ASSIGN_OR_RETURN(size_t axis, normalize_axis(call.node.attr_int("axis", 0), out_rank, call.name));
  ONYX_ASSIGN_OR_RETURN(size_t esize, element_bytes(first.dtype(), call.name));
  // Each item viewed with the new axis (of size 1) inserted, when asked.
  std::vector<Shape> shapes;
  for (const Value& item : items) {
    Shape dims = item.tensor().shape();
    if (new_axis) dims.insert(dims.begin() + long(axis), 1);
    if (dims.size() != shapes.emplace_back(std::move(dims)).size() || shapes.back().size() != size_t(out_rank))
      return invalid_argument(call.name + ": the items differ in rank");
    for (size_t d = 0; d < size_t(out_rank); ++d)
      if (d != axis && shapes.back()[d] != shapes[0][d])
        return invalid_argument(call.name + ": item shapes " + shape_string(item.tensor().shape()) + " and " +
                                shape_string(first.shape()) + " differ off the concatenation axis");
  }
  Shape out_dims = shapes[0];
  out_dims[axis] = 0;
  for (const Shape& s : shapes) out_dims[axis] += s[axis];
  Tensor out = Tensor::allocate(first.dtype(), out_dims);
  const int64_t outer = product(out_dims, 0, axis);
  const size_t inner = size_t(product(out_dims, axis + 1, out_dims.size())) * esize;
  const size_t out_block = size_t(out_dims[axis]) * inner;
  size_t offset = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const size_t piece = size_t(shapes[i][axis]) * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out.data()) + size_t(o) * out_block + offset,
                  static_cast<const char*>(items[i].tensor().data()) + size_t(o) * piece, piece);
    offset += piece;
  }
  call.outputs[0] = out;
  return Status();
}

// Identity of a sequence or optional: the same (immutable) value.
Status identity(HostKernelCall& call) {
  if (call.inputs.empty()) return invalid_argument(call.name + ": needs an input");
  call.outputs[0] = call.inputs[0];
  return Status();
}

}  // namespace

std::vector<HostKernelEntry> sequence_host_kernels() {
  return {{"SequenceEmpty", sequence_empty},     {"SequenceConstruct", sequence_construct},
          {"SequenceInsert", sequence_insert},   {"SequenceAt", sequence_at},
          {"SequenceErase", sequence_erase},     {"SequenceLength", sequence_length},
          {"SplitToSequence", split_to_sequence}, {"ConcatFromSequence", concat_from_sequence},
          {"Identity", identity}};
}

}  // namespace onyx::runtime
