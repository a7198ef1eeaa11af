// tensor_proto_codec.cpp: see tensor_proto_codec.h. Sizes and names come from
// the ABI's one dtype table (onyx_dtype.h).
#include "onyx/util/tensor_proto_codec.h"
#include "onyx/util/read_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <onyx_dtype.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>

namespace onyx::util {

namespace fs = std::filesystem;
using ONNX_NAMESPACE::TensorProto;

// raw_data is little-endian; so is every machine Onyx runs on today.
static_assert(std::endian::native == std::endian::little, "big-endian hosts need byte swapping");

namespace {

CodecError error(CodecError::Kind kind, std::string message) { return {kind, std::move(message)}; }
CodecError invalid(std::string message) { return error(CodecError::kInvalid, std::move(message)); }

std::string name_of(int32_t dtype) {
  const char* name = onyx_dtype_name(dtype);
  return name ? name : "dtype " + std::to_string(dtype);
}

std::string shape_text(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

std::string label(const TensorProto& proto, const std::string& what) {
  return "tensor '" + (proto.name().empty() ? what : proto.name()) + "'";
}

bool known_dtype(int32_t dtype) { return dtype == ONYX_DTYPE_STRING || onyx_dtype_storage_bytes(dtype, 1) > 0; }

// Element count of `dims`, refusing negative dims and absurd products.
CodecError checked_count(std::span<const int64_t> dims, const std::string& who, int64_t& count) {
  count = 1;
  for (int64_t d : dims) {
    if (d < 0) return invalid(who + " has a negative dim " + std::to_string(d));
    if (d != 0 && count > (int64_t(1) << 50) / d) return invalid(who + " has too many elements (dims overflow)");
    count *= d;
  }
  return {};
}

// 64-byte aligned zeroed storage for `bytes` bytes, reported as a CodecError when memory runs out.
CodecError allocate(DecodedTensor& t, size_t bytes, const std::string& who) {
  void* p = std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
  if (!p)
    return error(CodecError::kOutOfMemory, who + ": cannot allocate " + std::to_string(bytes) + " bytes for " +
                                               name_of(t.dtype) + " " + shape_text(t.dims));
  std::memset(p, 0, bytes);
  t.storage = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.data = p;
  t.bytes = bytes;
  return {};
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
    default:  // int32_data: one element each, or one packed byte of sub-byte elements
      return {proto.int32_data_size(),
              onyx_dtype_size(dtype) ? count : int64_t(onyx_dtype_storage_bytes(dtype, count))};
  }
}

// Decodes the typed *_data field into `t` (sized already; entries checked).
void decode_typed(const TensorProto& proto, DecodedTensor& t) {
  switch (t.dtype) {
    case ONYX_DTYPE_FLOAT32: case ONYX_DTYPE_COMPLEX64: copy_narrowed<float>(proto.float_data(), t.data); return;
    case ONYX_DTYPE_FLOAT64: case ONYX_DTYPE_COMPLEX128: copy_narrowed<double>(proto.double_data(), t.data); return;
    case ONYX_DTYPE_INT64: copy_narrowed<int64_t>(proto.int64_data(), t.data); return;
    case ONYX_DTYPE_UINT32: copy_narrowed<uint32_t>(proto.uint64_data(), t.data); return;
    case ONYX_DTYPE_UINT64: copy_narrowed<uint64_t>(proto.uint64_data(), t.data); return;
    case ONYX_DTYPE_STRING: t.strings.assign(proto.string_data().begin(), proto.string_data().end()); return;
    case ONYX_DTYPE_BOOL: {
      uint8_t* out = static_cast<uint8_t*>(t.data);
      for (int k = 0; k < proto.int32_data_size(); ++k) out[k] = proto.int32_data(k) != 0;
      return;
    }
    default: break;
  }
  // int32_data holds int32 values, or 16/8-bit patterns (float16, float8...)
  // widened to int32, or packed bytes of sub-byte types.
  switch (onyx_dtype_size(t.dtype)) {
    case 4: copy_narrowed<int32_t>(proto.int32_data(), t.data); return;
    case 2: copy_narrowed<uint16_t>(proto.int32_data(), t.data); return;
    default: copy_narrowed<uint8_t>(proto.int32_data(), t.data); return;
  }
}

CodecError parse_size(const std::string& text, const std::string& key, const std::string& who, uint64_t& v) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    return invalid(who + ": external data " + key + " '" + text + "' is not a byte count");
  return {};
}

// A location as messages quote it: at most 200 characters.
std::string shortened(const std::string& text) {
  return text.size() <= 200 ? text : text.substr(0, 200) + "... (" + std::to_string(text.size()) + " characters)";
}

// The file `location` names, checked to lie inside `base_dir`.
CodecError resolve_external_path(const std::string& location, const std::string& base_dir, const std::string& who,
                                 fs::path& out) {
  const std::string where = who + ": external data location '" + shortened(location) + "'";
  if (location.empty()) return invalid(where + " is empty");
  // A NUL ends the path the system sees: "inside.bin\0/../../secret" would
  // be checked as one path and opened as another.
  if (location.find('\0') != std::string::npos) return invalid(where + " contains a NUL byte");
  if (base_dir.empty())
    return invalid(where + " cannot be read: the model was loaded from memory, so it "
                           "has no folder to resolve it against");
  fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory())
    return invalid(where + " is an absolute path; it must be relative to the model's folder");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::absolute(base_dir, ec), ec);
  if (ec) return invalid(where + ": cannot resolve the model folder '" + base_dir + "'");
  // weakly_canonical resolves "..", "." and symlinks of the parts that exist.
  fs::path full = fs::weakly_canonical(base / loc, ec);
  if (ec) return invalid(where + ": cannot resolve the path (" + ec.message() + ")");
  auto [base_end, full_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (base_end != base.end() || full == base)
    return invalid(where + " resolves to '" + full.string() + "', outside the model's folder '" + base.string() +
                   "'; refused");
  const fs::file_status status = fs::status(full, ec);
  if (!fs::exists(status))
    return error(CodecError::kNotFound, where + ": no such file ('" + full.string() + "')");
  if (!fs::is_regular_file(status))
    return invalid(where + " is not a regular file ('" + full.string() + "' is a " +
                   (fs::is_directory(status) ? "folder" : fs::is_fifo(status) ? "FIFO" : "special file") + ")");
  out = full;
  return {};
}

// Opens `location` below `base` as one step, so that the file checked is the
// file read: openat2's RESOLVE_BENEATH makes the kernel refuse any path
// ("..", a symlink) that leaves the folder, even one swapped in after the
// check above. Without openat2 (Linux < 5.6): O_NOFOLLOW on the last part.
// Returns the descriptor, or -errno.
int open_beneath(const fs::path& base, const std::string& location) {
  int dir = ::open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return -errno;
#ifdef SYS_openat2
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  how.resolve = RESOLVE_BENEATH;
  long resolved = ::syscall(SYS_openat2, dir, location.c_str(), &how, sizeof how);
  if (resolved >= 0 || errno != ENOSYS) {
    int error = errno;
    ::close(dir);
    return resolved >= 0 ? int(resolved) : -error;
  }
#endif
  int fd = ::openat(dir, location.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  int error = errno;
  ::close(dir);
  return fd >= 0 ? fd : -error;
}

// Reads external data into `t` (dtype and dims set), after checking the
// location and that the file holds exactly the tensor's bytes.
CodecError read_external(const TensorProto& proto, const std::string& base_dir, int64_t count, const std::string& who,
                         DecodedTensor& t) {
  std::string location, offset_text, length_text;
  bool has_length = false;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") location = entry.value();
    else if (entry.key() == "offset") offset_text = entry.value();
    else if (entry.key() == "length") length_text = entry.value(), has_length = true;
  }
  if (t.dtype == ONYX_DTYPE_STRING)
    return error(CodecError::kUnsupported, who + ": STRING tensors cannot use external data");
  const uint64_t expected = onyx_dtype_storage_bytes(t.dtype, count);
  fs::path path;
  if (CodecError e = resolve_external_path(location, base_dir, who, path); !e.ok()) return e;
  const std::string where = who + ": external data '" + shortened(location) + "'";
  uint64_t offset = 0;
  if (!offset_text.empty())
    if (CodecError e = parse_size(offset_text, "offset", who, offset); !e.ok()) return e;
  std::error_code ec;
  const int fd = open_beneath(fs::weakly_canonical(fs::absolute(base_dir, ec), ec), location);
  if (fd < 0)
    return error(-fd == ENOENT ? CodecError::kNotFound : CodecError::kInvalid,
                 where + ": cannot open it inside the model's folder (" + std::strerror(-fd) + ")");
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  auto close_with = [fd](CodecError e) {
    ::close(fd);
    return e;
  };
  if (!stat_ok || !S_ISREG(st.st_mode)) return close_with(invalid(where + " is not a regular file"));
  // A hard link makes a file outside the folder look like one inside it.
  if (st.st_nlink > 1)
    return close_with(invalid(where + " has " + std::to_string(st.st_nlink) +
                              " hard links; a linked file may live outside the model's folder, so it is refused"));
  const uint64_t file_size = uint64_t(st.st_size);
  if (offset > file_size)
    return close_with(invalid(where + ": offset " + std::to_string(offset) + " is past the end of the " +
                              std::to_string(file_size) + "-byte file"));
  uint64_t length = file_size - offset;
  if (has_length)
    if (CodecError e = parse_size(length_text, "length", who, length); !e.ok()) return close_with(e);
  if (length > file_size - offset)
    return close_with(invalid(where + ": offset " + std::to_string(offset) + " + length " + std::to_string(length) +
                              " exceeds the file size " + std::to_string(file_size)));
  if (length != expected)
    return close_with(invalid(where + ": holds " + std::to_string(length) + " bytes but " + name_of(t.dtype) + " " +
                              shape_text(t.dims) + " needs " + std::to_string(expected)));
  if (CodecError e = allocate(t, expected, who); !e.ok()) return close_with(e);
  for (uint64_t done = 0; done < length;) {
    ssize_t n = ::pread(fd, static_cast<char*>(t.data) + done, std::min<uint64_t>(length - done, uint64_t(1) << 30),
                        off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return close_with(error(CodecError::kReadFailed, where + ": read failed"));
    done += uint64_t(n);
  }
  ::close(fd);
  return {};
}

}  // namespace

CodecError decode_tensor_proto(const TensorProto& proto, const DecodeOptions& options, DecodedTensor& out) {
  return decode_tensor_proto_with_raw_data(proto, options, std::nullopt, out);
}

CodecError decode_tensor_proto_with_raw_data(const TensorProto& proto, const DecodeOptions& options,
                                             std::optional<std::string_view> raw_data, DecodedTensor& out) {
  const std::string who = label(proto, options.what);
  DecodedTensor t;
  t.dtype = proto.data_type();
  if (t.dtype == ONYX_DTYPE_UNDEFINED) return invalid(who + " has no data_type");
  if (!known_dtype(t.dtype))
    return error(CodecError::kUnsupported,
                 who + " has data_type " + std::to_string(t.dtype) + ", which Onyx does not support");
  if (proto.has_segment()) return error(CodecError::kUnsupported, who + " uses segments, which Onyx does not support");
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  int64_t count = 0;
  if (CodecError e = checked_count(t.dims, who, count); !e.ok()) return e;
  // Sizes are checked before allocating: a corrupt proto may claim huge dims.
  if (proto.data_location() == TensorProto::EXTERNAL) {
    if (CodecError e = read_external(proto, options.base_dir, count, who, t); !e.ok()) return e;
  } else if (proto.has_raw_data()) {
    if (t.dtype == ONYX_DTYPE_STRING) return invalid(who + ": STRING data cannot be raw_data");
    const std::string_view raw = raw_data ? *raw_data : std::string_view(proto.raw_data());
    const size_t expected = onyx_dtype_storage_bytes(t.dtype, count);
    if (raw.size() != expected)
      return invalid(who + " (" + name_of(t.dtype) + ", " + shape_text(t.dims) + ") has " +
                     std::to_string(raw.size()) + " bytes of raw_data, expected " + std::to_string(expected));
    if (CodecError e = allocate(t, expected, who); !e.ok()) return e;
    if (expected) std::memcpy(t.data, raw.data(), expected);
  } else {
    auto [found, expected] = typed_entries(proto, t.dtype, count);
    if (found != expected)
      return invalid(who + " (" + name_of(t.dtype) + ", " + shape_text(t.dims) + ") holds " + std::to_string(found) +
                     " values, expected " + std::to_string(expected));
    if (t.dtype != ONYX_DTYPE_STRING)
      if (CodecError e = allocate(t, onyx_dtype_storage_bytes(t.dtype, count), who); !e.ok()) return e;
    decode_typed(proto, t);
  }
  out = std::move(t);
  return {};
}

CodecError decode_sparse_tensor_proto(const ONNX_NAMESPACE::SparseTensorProto& proto, const DecodeOptions& options,
                                      DecodedTensor& out) {
  const std::string name = proto.values().name().empty() ? options.what : proto.values().name();
  const std::string who = "sparse tensor '" + name + "'";
  DecodedTensor values, indices;
  if (CodecError e = decode_tensor_proto(proto.values(), {options.base_dir, name}, values); !e.ok()) return e;
  if (CodecError e = decode_tensor_proto(proto.indices(), {options.base_dir, name + ".indices"}, indices); !e.ok())
    return e;
  DecodedTensor dense;
  dense.dtype = values.dtype;
  dense.dims.assign(proto.dims().begin(), proto.dims().end());
  int64_t total = 0;
  if (CodecError e = checked_count(dense.dims, who, total); !e.ok()) return e;
  const size_t elem = onyx_dtype_size(values.dtype);
  if (elem == 0)
    return error(CodecError::kUnsupported, who + ": " + name_of(values.dtype) + " sparse values are not supported");
  if (values.dims.size() != 1) return invalid(who + ": values must be 1-D");
  if (indices.dtype != ONYX_DTYPE_INT64) return invalid(who + ": indices must be int64");
  const int64_t nnz = values.dims[0];
  const size_t rank = dense.dims.size();
  const std::vector<int64_t>& ishape = indices.dims;
  const bool linear = ishape.size() == 1 && ishape[0] == nnz;
  const bool coords = ishape.size() == 2 && ishape[0] == nnz && ishape[1] == int64_t(rank);
  if (!linear && !coords)
    return invalid(who + ": indices " + shape_text(ishape) + " must be [" + std::to_string(nnz) + "] or [" +
                   std::to_string(nnz) + ", " + std::to_string(rank) + "]");
  // Checked before allocating: one value with dims [2^30] asked for 4 GiB.
  if (uint64_t(total) > kMaxDensifiedBytes / elem)
    return invalid(who + ": its dense form " + shape_text(dense.dims) + " of " + name_of(values.dtype) + " needs " +
                   std::to_string(uint64_t(total)) + " x " + std::to_string(elem) + " bytes, past the " +
                   std::to_string(kMaxDensifiedBytes) + "-byte budget for densifying a sparse tensor (" +
                   std::to_string(nnz) + " values stored)");
  if (CodecError e = allocate(dense, size_t(total) * elem, who); !e.ok()) return e;
  const int64_t* idx = static_cast<const int64_t*>(indices.data);
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t offset = 0;
    if (linear) {
      offset = idx[k];
    } else {
      for (size_t a = 0; a < rank; ++a) {
        int64_t c = idx[k * int64_t(rank) + int64_t(a)];
        if (c < 0 || c >= dense.dims[a]) {
          offset = -1;
          break;
        }
        offset = offset * dense.dims[a] + c;
      }
    }
    if (offset < 0 || offset >= total)
      return invalid(who + ": index of value " + std::to_string(k) + " is out of range for " +
                     shape_text(dense.dims));
    std::memcpy(static_cast<char*>(dense.data) + size_t(offset) * elem,
                static_cast<const char*>(values.data) + size_t(k) * elem, elem);
  }
  out = std::move(dense);
  return {};
}

CodecError decode_tensor_proto_file(const std::string& path, DecodedTensor& out) {
  std::string bytes;
  int read_error = 0;
  const std::string failure = read_regular_file(path, &bytes, &read_error);
  if (read_error == ENOENT) return error(CodecError::kNotFound, "cannot open tensor file '" + path + "'");
  if (!failure.empty()) return error(CodecError::kReadFailed, "tensor file: " + failure);
  TensorProto proto;
  if (!proto.ParseFromString(bytes))
    return invalid("'" + path + "' is not a valid TensorProto (protobuf parse failed)");
  return decode_tensor_proto(proto, {fs::path(path).parent_path().string(), fs::path(path).filename().string()},
                             out);
}

CodecError encode_tensor_proto(const std::string& name, int32_t dtype, std::span<const int64_t> dims,
                               std::span<const std::byte> data, TensorProto& out) {
  const std::string who = "tensor '" + name + "'";
  if (onyx_dtype_storage_bytes(dtype, 1) == 0)
    return error(CodecError::kUnsupported, who + ": " + name_of(dtype) + " cannot be written as raw_data");
  int64_t count = 0;
  if (CodecError e = checked_count(dims, who, count); !e.ok()) return e;
  const size_t expected = onyx_dtype_storage_bytes(dtype, count);
  if (data.size() != expected)
    return invalid(who + " (" + name_of(dtype) + ", " + shape_text(dims) + ") is given " +
                   std::to_string(data.size()) + " bytes, expected " + std::to_string(expected));
  out.Clear();
  out.set_name(name);
  out.set_data_type(dtype);
  for (int64_t d : dims) out.add_dims(d);
  out.set_raw_data(data.data(), data.size());
  return {};
}

}  // namespace onyx::util
