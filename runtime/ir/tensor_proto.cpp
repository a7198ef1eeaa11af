#include "ir/tensor_proto.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>

namespace onyx::runtime::ir {

namespace fs = std::filesystem;
using ONNX_NAMESPACE::TensorProto;

// raw_data is little-endian; so is every machine Onyx runs on today.
static_assert(std::endian::native == std::endian::little, "big-endian hosts need byte swapping");

namespace {

std::string label(const TensorProto& proto, const std::string& what) {
  return "tensor '" + (proto.name().empty() ? what : proto.name()) + "'";
}

bool known_dtype(int32_t dtype) {
  return dtype == ONYX_DTYPE_STRING || dtype_size(dtype) > 0 || storage_bytes(dtype, 2) == 1;
}

// Element count of `dims`, refusing negative dims and absurd products.
StatusOr<int64_t> checked_count(const google::protobuf::RepeatedField<int64_t>& dims,
                                const std::string& who) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) return invalid_argument(who + " has a negative dim " + std::to_string(d));
    if (d != 0 && count > (int64_t(1) << 50) / d)
      return invalid_argument(who + " has too many elements (dims overflow)");
    count *= d;
  }
  return count;
}

// Copies typed proto values into `dst`, narrowing each to Dst (for 16/8-bit
// types the proto holds bit patterns widened to int32).
template <typename Dst, typename Field>
void copy_narrowed(const Field& src, void* dst) {
  Dst* out = static_cast<Dst*>(dst);
  for (int k = 0; k < src.size(); ++k) out[k] = static_cast<Dst>(src.Get(k));
}

// The number of entries the typed field for `dtype` holds, and how many it
// must hold for `count` elements.
std::pair<int64_t, int64_t> typed_entries(const TensorProto& proto, int32_t dtype, int64_t count) {
  switch (dtype) {
    case ONYX_DTYPE_FLOAT32: return {proto.float_data_size(), count};
    case ONYX_DTYPE_COMPLEX64: return {proto.float_data_size(), 2 * count};
    case ONYX_DTYPE_FLOAT64: return {proto.double_data_size(), count};
    case ONYX_DTYPE_COMPLEX128: return {proto.double_data_size(), 2 * count};
    case ONYX_DTYPE_INT64: return {proto.int64_data_size(), count};
    case ONYX_DTYPE_UINT32: case ONYX_DTYPE_UINT64: return {proto.uint64_data_size(), count};
    case ONYX_DTYPE_STRING: return {proto.string_data_size(), count};
    default:  // int32_data: one element each, or one packed byte of two 4-bit elements
      return {proto.int32_data_size(), dtype_size(dtype) ? count : int64_t(storage_bytes(dtype, count))};
  }
}

// Decodes the typed *_data field into `t` (sized already; entries checked).
void decode_typed(const TensorProto& proto, Tensor& t) {
  switch (t.dtype()) {
    case ONYX_DTYPE_FLOAT32: case ONYX_DTYPE_COMPLEX64: copy_narrowed<float>(proto.float_data(), t.data()); return;
    case ONYX_DTYPE_FLOAT64: case ONYX_DTYPE_COMPLEX128: copy_narrowed<double>(proto.double_data(), t.data()); return;
    case ONYX_DTYPE_INT64: copy_narrowed<int64_t>(proto.int64_data(), t.data()); return;
    case ONYX_DTYPE_UINT32: copy_narrowed<uint32_t>(proto.uint64_data(), t.data()); return;
    case ONYX_DTYPE_UINT64: copy_narrowed<uint64_t>(proto.uint64_data(), t.data()); return;
    case ONYX_DTYPE_STRING: {
      std::string* out = t.data_as<std::string>();
      for (int k = 0; k < proto.string_data_size(); ++k) out[k] = proto.string_data(k);
      return;
    }
    case ONYX_DTYPE_BOOL: {
      uint8_t* out = t.data_as<uint8_t>();
      for (int k = 0; k < proto.int32_data_size(); ++k) out[k] = proto.int32_data(k) != 0;
      return;
    }
    default: break;
  }
  // int32_data holds int32 values, or 16/8-bit patterns (float16, float8...)
  // widened to int32, or packed bytes of 4-bit types.
  switch (dtype_size(t.dtype())) {
    case 4: copy_narrowed<int32_t>(proto.int32_data(), t.data()); return;
    case 2: copy_narrowed<uint16_t>(proto.int32_data(), t.data()); return;
    default: copy_narrowed<uint8_t>(proto.int32_data(), t.data()); return;
  }
}

// Tensor::allocate, with running out of memory reported as a Status.
StatusOr<Tensor> allocate(int32_t dtype, const Shape& shape, const std::string& who) {
  try {
    return Tensor::allocate(dtype, shape);
  } catch (const std::bad_alloc&) {
    return Status(ONYX_STATUS_OUT_OF_MEMORY, who + ": cannot allocate " +
                  std::to_string(storage_bytes(dtype, element_count(shape))) + " bytes for " +
                  dtype_name(dtype) + " " + shape_string(shape));
  }
}

StatusOr<uint64_t> parse_size(const std::string& text, const std::string& key, const std::string& who) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    return invalid_argument(who + ": external data " + key + " '" + text + "' is not a byte count");
  return v;
}

// The file `location` names, checked to lie inside `base_dir`.
StatusOr<fs::path> resolve_external_path(const std::string& location, const std::string& base_dir,
                                         const std::string& who) {
  const std::string where = who + ": external data location '" + location + "'";
  if (location.empty()) return invalid_argument(where + " is empty");
  if (base_dir.empty())
    return invalid_argument(where + " cannot be read: the model was loaded from memory, so it "
                            "has no folder to resolve it against");
  fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory())
    return invalid_argument(where + " is an absolute path; it must be relative to the model's folder");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::absolute(base_dir, ec), ec);
  if (ec) return invalid_argument(where + ": cannot resolve the model folder '" + base_dir + "'");
  // weakly_canonical resolves "..", "." and symlinks of the parts that exist.
  fs::path full = fs::weakly_canonical(base / loc, ec);
  if (ec) return invalid_argument(where + ": cannot resolve the path (" + ec.message() + ")");
  auto [base_end, full_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (base_end != base.end() || full == base)
    return invalid_argument(where + " resolves to '" + full.string() +
                            "', outside the model's folder '" + base.string() + "'; refused");
  if (!fs::is_regular_file(full, ec))
    return not_found(where + ": no such file ('" + full.string() + "')");
  return full;
}

// Reads external data into a new tensor of `dtype` and `shape`, after checking
// the location and that the file holds exactly the tensor's bytes.
StatusOr<Tensor> read_external(const TensorProto& proto, const std::string& base_dir, int32_t dtype,
                               const Shape& shape, const std::string& who) {
  std::string location, offset_text, length_text;
  bool has_length = false;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") location = entry.value();
    else if (entry.key() == "offset") offset_text = entry.value();
    else if (entry.key() == "length") length_text = entry.value(), has_length = true;
  }
  if (dtype == ONYX_DTYPE_STRING)
    return unimplemented(who + ": STRING tensors cannot use external data");
  const uint64_t expected = storage_bytes(dtype, element_count(shape));
  ONYX_ASSIGN_OR_RETURN(fs::path path, resolve_external_path(location, base_dir, who));
  const std::string where = who + ": external data '" + location + "'";
  uint64_t offset = 0;
  if (!offset_text.empty()) { ONYX_ASSIGN_OR_RETURN(offset, parse_size(offset_text, "offset", who)); }
  std::error_code ec;
  const uint64_t file_size = fs::file_size(path, ec);
  if (ec) return not_found(where + ": cannot stat the file (" + ec.message() + ")");
  if (offset > file_size)
    return invalid_argument(where + ": offset " + std::to_string(offset) + " is past the end of the " +
                            std::to_string(file_size) + "-byte file");
  uint64_t length = file_size - offset;
  if (has_length) { ONYX_ASSIGN_OR_RETURN(length, parse_size(length_text, "length", who)); }
  if (length > file_size - offset)
    return invalid_argument(where + ": offset " + std::to_string(offset) + " + length " +
                            std::to_string(length) + " exceeds the file size " + std::to_string(file_size));
  if (length != expected)
    return invalid_argument(where + ": holds " + std::to_string(length) + " bytes but " +
                            dtype_name(dtype) + " " + shape_string(shape) + " needs " +
                            std::to_string(expected));
  ONYX_ASSIGN_OR_RETURN(Tensor t, allocate(dtype, shape, who));
  std::ifstream in(path, std::ios::binary);
  in.seekg(std::streamoff(offset));
  if (length && !in.read(static_cast<char*>(t.data()), std::streamsize(length)))
    return data_loss(where + ": read failed");
  return t;
}

}  // namespace

Tensor make_string_tensor(Shape shape, std::vector<std::string> strings) {
  auto storage = std::make_shared<std::vector<std::string>>(std::move(strings));
  storage->resize(size_t(std::max<int64_t>(element_count(shape), 0)));
  return Tensor::wrap(ONYX_DTYPE_STRING, std::move(shape), storage->data(), storage);
}

StatusOr<Tensor> tensor_from_proto(const TensorProto& proto, const std::string& base_dir,
                                   const std::string& what) {
  const std::string who = label(proto, what);
  const int32_t dtype = proto.data_type();
  if (dtype == ONYX_DTYPE_UNDEFINED) return invalid_argument(who + " has no data_type");
  if (!known_dtype(dtype))
    return unimplemented(who + " has data_type " + std::to_string(dtype) +
                         ", which Onyx does not support");
  if (proto.has_segment()) return unimplemented(who + " uses segments, which Onyx does not support");
  ONYX_ASSIGN_OR_RETURN(int64_t count, checked_count(proto.dims(), who));
  Shape shape(proto.dims().begin(), proto.dims().end());
  // Sizes are checked before allocating: a corrupt proto may claim huge dims.
  if (proto.data_location() == TensorProto::EXTERNAL)
    return read_external(proto, base_dir, dtype, shape, who);
  if (proto.has_raw_data()) {
    if (dtype == ONYX_DTYPE_STRING) return invalid_argument(who + ": STRING data cannot be raw_data");
    const size_t expected = storage_bytes(dtype, count);
    if (proto.raw_data().size() != expected)
      return invalid_argument(who + " (" + dtype_name(dtype) + ", " + shape_string(shape) +
                              ") has " + std::to_string(proto.raw_data().size()) +
                              " bytes of raw_data, expected " + std::to_string(expected));
    ONYX_ASSIGN_OR_RETURN(Tensor t, allocate(dtype, shape, who));
    if (expected) std::memcpy(t.data(), proto.raw_data().data(), expected);
    return t;
  }
  auto [found, expected] = typed_entries(proto, dtype, count);
  if (found != expected)
    return invalid_argument(who + " (" + dtype_name(dtype) + ", " + shape_string(shape) + ") holds " +
                            std::to_string(found) + " values, expected " + std::to_string(expected));
  Tensor t;
  if (dtype == ONYX_DTYPE_STRING) {
    t = make_string_tensor(shape, {});
  } else {
    ONYX_ASSIGN_OR_RETURN(t, allocate(dtype, shape, who));
  }
  decode_typed(proto, t);
  return t;
}

StatusOr<Tensor> sparse_to_dense(const ONNX_NAMESPACE::SparseTensorProto& proto,
                                 const std::string& base_dir, const std::string& what) {
  const std::string name = proto.values().name().empty() ? what : proto.values().name();
  const std::string who = "sparse tensor '" + name + "'";
  ONYX_ASSIGN_OR_RETURN(Tensor values, tensor_from_proto(proto.values(), base_dir, name));
  ONYX_ASSIGN_OR_RETURN(Tensor indices, tensor_from_proto(proto.indices(), base_dir, name + ".indices"));
  ONYX_RETURN_IF_ERROR(checked_count(proto.dims(), who).status());
  Shape dims(proto.dims().begin(), proto.dims().end());
  const size_t elem = dtype_size(values.dtype());
  if (elem == 0 || values.dtype() == ONYX_DTYPE_STRING)
    return unimplemented(who + ": " + dtype_name(values.dtype()) + " sparse values are not supported");
  if (values.shape().size() != 1) return invalid_argument(who + ": values must be 1-D");
  if (indices.dtype() != ONYX_DTYPE_INT64) return invalid_argument(who + ": indices must be int64");
  const int64_t nnz = values.shape()[0];
  const size_t rank = dims.size();
  const Shape& ishape = indices.shape();
  const bool linear = ishape.size() == 1 && ishape[0] == nnz;
  const bool coords = ishape.size() == 2 && ishape[0] == nnz && ishape[1] == int64_t(rank);
  if (!linear && !coords)
    return invalid_argument(who + ": indices " + shape_string(ishape) + " must be [" +
                            std::to_string(nnz) + "] or [" + std::to_string(nnz) + ", " +
                            std::to_string(rank) + "]");
  ONYX_ASSIGN_OR_RETURN(Tensor dense, allocate(values.dtype(), dims, who));
  const int64_t total = element_count(dims);
  const int64_t* idx = indices.data_as<int64_t>();
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t offset = 0;
    if (linear) {
      offset = idx[k];
    } else {
      for (size_t a = 0; a < rank; ++a) {
        int64_t c = idx[k * int64_t(rank) + int64_t(a)];
        if (c < 0 || c >= dims[a]) { offset = -1; break; }
        offset = offset * dims[a] + c;
      }
    }
    if (offset < 0 || offset >= total)
      return invalid_argument(who + ": index of value " + std::to_string(k) + " is out of range for " +
                              shape_string(dims));
    std::memcpy(static_cast<char*>(dense.data()) + size_t(offset) * elem,
                static_cast<const char*>(values.data()) + size_t(k) * elem, elem);
  }
  return dense;
}

StatusOr<Tensor> load_tensor_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open tensor file '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TensorProto proto;
  if (!proto.ParseFromString(bytes))
    return invalid_argument("'" + path + "' is not a valid TensorProto (protobuf parse failed)");
  return tensor_from_proto(proto, fs::path(path).parent_path().string(), fs::path(path).filename().string());
}

}  // namespace onyx::runtime::ir
