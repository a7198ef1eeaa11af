// npy_layout.cpp: see npy_layout.h. Layout: "\x93NUMPY", major, minor, header
// length (2 bytes LE for v1, 4 bytes for v2/v3), then a Python dict literal
// such as {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded
// with spaces and '\n', then the raw data.
#include "npy_layout.h"

#include <onyx_dtype.h>

#include <cstring>
#include <limits>
#include <map>

#include "command.h"

namespace onyx::cli {

namespace {

std::string type_name(int32_t dtype) {
  const char* name = onyx_dtype_name(dtype);
  return name ? name : "dtype(" + std::to_string(dtype) + ")";
}

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t k = 0; k < dims.size(); ++k) text += (k ? ", " : "") + std::to_string(dims[k]);
  return text + "]";
}

struct DescrEntry {
  const char* code;  // kind + item size, as in '<f4' without the byte-order mark
  int32_t dtype;
};
constexpr DescrEntry kDescrs[] = {
    {"f4", ONYX_DTYPE_FLOAT32}, {"f8", ONYX_DTYPE_FLOAT64}, {"f2", ONYX_DTYPE_FLOAT16},
    {"i1", ONYX_DTYPE_INT8},    {"i2", ONYX_DTYPE_INT16},   {"i4", ONYX_DTYPE_INT32},
    {"i8", ONYX_DTYPE_INT64},   {"u1", ONYX_DTYPE_UINT8},   {"u2", ONYX_DTYPE_UINT16},
    {"u4", ONYX_DTYPE_UINT32},  {"u8", ONYX_DTYPE_UINT64},  {"b1", ONYX_DTYPE_BOOL},
    {"c8", ONYX_DTYPE_COMPLEX64}, {"c16", ONYX_DTYPE_COMPLEX128},
};

// The header dict's values: strings, booleans and tuples of integers.
struct HeaderValue {
  enum Kind { kString, kBool, kTuple } kind = kString;
  std::string text;
  bool flag = false;
  std::vector<int64_t> ints;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& where) : s_(text), where_(where) {}

  std::map<std::string, HeaderValue> dict() {
    std::map<std::string, HeaderValue> out;
    expect('{');
    while (!peek('}')) {
      std::string key = quoted();
      expect(':');
      out[key] = value();
      if (!peek('}')) expect(',');
    }
    expect('}');
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    // At most 200 characters of the header: a v2 header may be 4 GiB.
    throw CliError(where_ + ": malformed .npy header (" + what + ") at offset " + std::to_string(pos_) + ": " +
                   s_.substr(0, 200) + (s_.size() > 200 ? "..." : ""));
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t')) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string quoted() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a string");
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) fail("unterminated string");
    std::string text = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return text;
  }
  int64_t integer() {
    skip_space();
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    if (start == pos_) fail("expected a dimension");
    if (pos_ - start > 18) fail("dimension too large");
    int64_t value = std::stoll(s_.substr(start, pos_ - start));
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long suffix
    return value;
  }
  HeaderValue value() {
    HeaderValue v;
    skip_space();
    if (s_.compare(pos_, 4, "True") == 0 || s_.compare(pos_, 5, "False") == 0) {
      v.kind = HeaderValue::kBool;
      v.flag = s_[pos_] == 'T';
      pos_ += v.flag ? 4 : 5;
    } else if (peek('(')) {
      v.kind = HeaderValue::kTuple;
      ++pos_;
      while (!peek(')')) {
        v.ints.push_back(integer());
        if (!peek(')')) expect(',');
      }
      ++pos_;
    } else {
      v.text = quoted();
    }
    return v;
  }

  const std::string& s_;
  const std::string& where_;
  size_t pos_ = 0;
};

int32_t dtype_from_descr(const std::string& descr, const std::string& where) {
  if (descr.size() < 2) throw CliError(where + ": unsupported .npy dtype '" + descr + "'");
  char order = descr[0];
  std::string code = descr.substr(1);
  for (const DescrEntry& e : kDescrs) {
    if (code != e.code) continue;
    bool single_byte = onyx_dtype_size(e.dtype) == 1;
    if (order == '>' && !single_byte)
      throw CliError(where + ": big-endian data ('" + descr + "') is not supported; save it little-endian");
    if (order != '<' && order != '|' && order != '=' && order != '>')
      break;
    return e.dtype;
  }
  throw CliError(where + ": unsupported .npy dtype '" + descr +
                 "' (supported: float16/32/64, int8/16/32/64, uint8/16/32/64, bool, complex64/128)");
}

std::string descr_for_dtype(int32_t dtype) {
  for (const DescrEntry& e : kDescrs)
    if (e.dtype == dtype) return std::string(onyx_dtype_size(dtype) == 1 ? "|" : "<") + e.code;
  throw CliError("no .npy dtype for " + type_name(dtype));
}

}  // namespace

NpyLayout parse_npy_layout(const std::string& bytes, const std::string& where) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    throw CliError(where + ": not a .npy file (bad magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  auto byte_at = [&](size_t k) { return size_t(static_cast<unsigned char>(bytes[k])); };
  if (major == 1) {
    header_len = byte_at(8) | byte_at(9) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw CliError(where + ": truncated .npy header");
    header_len = byte_at(8) | byte_at(9) << 8 | byte_at(10) << 16 | byte_at(11) << 24;
    header_start = 12;
  } else {
    throw CliError(where + ": unsupported .npy format version " + std::to_string(major));
  }
  if (header_start + header_len > bytes.size()) throw CliError(where + ": truncated .npy header");

  std::string header = bytes.substr(header_start, header_len);
  std::map<std::string, HeaderValue> dict = HeaderParser(header, where).dict();
  auto field = [&](const std::string& key, HeaderValue::Kind kind) -> const HeaderValue& {
    auto it = dict.find(key);
    if (it == dict.end() || it->second.kind != kind)
      throw CliError(where + ": .npy header lacks a valid '" + key + "'");
    return it->second;
  };
  const int32_t dtype = dtype_from_descr(field("descr", HeaderValue::kString).text, where);
  if (field("fortran_order", HeaderValue::kBool).flag)
    throw CliError(where + ": Fortran-ordered (column-major) arrays are not supported; "
                   "save with numpy.ascontiguousarray(a) first");
  std::vector<int64_t> dims = field("shape", HeaderValue::kTuple).ints;

  const size_t item = onyx_dtype_size(dtype);
  size_t count = 1;
  for (int64_t d : dims) {
    if (d != 0 && count > std::numeric_limits<size_t>::max() / item / size_t(d))
      throw CliError(where + ": shape too large");
    count *= size_t(d);
  }
  size_t data_start = header_start + header_len;
  size_t available = bytes.size() - data_start;
  if (available != count * item)
    throw CliError(where + ": shape " + shape_string(dims) + " of " + type_name(dtype) + " needs " +
                   std::to_string(count * item) + " data bytes, file has " + std::to_string(available));

  NpyLayout layout;
  layout.dtype = dtype;
  layout.dims = std::move(dims);
  layout.data_offset = data_start;
  layout.data_bytes = count * item;
  return layout;
}

std::string npy_descr_for(int32_t dtype) { return descr_for_dtype(dtype); }

}  // namespace onyx::cli
