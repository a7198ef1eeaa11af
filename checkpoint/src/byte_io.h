// byte_io.h: little-endian encoding of the table of contents. The reader
// never reads past its span: a short or malformed table sets a sticky error
// (with the offset) and yields zeros, so parsing code checks ok() once per
// record instead of after every field.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onyx::checkpoint {

static_assert(std::endian::native == std::endian::little,
              "the checkpoint format is little-endian; big-endian hosts need byte swapping here");

class ByteWriter {
 public:
  void u8(uint8_t v) { put(&v, 1); }
  void u32(uint32_t v) { put(&v, 4); }
  void i32(int32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  void i64(int64_t v) { put(&v, 8); }
  void f64(double v) { put(&v, 8); }
  void str(std::string_view s) {
    u32(uint32_t(s.size()));
    put(s.data(), s.size());
  }
  std::vector<std::byte>& bytes() { return out_; }

 private:
  void put(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::vector<std::byte> out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> in) : in_(in) {}

  uint8_t u8() { return get<uint8_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  int32_t i32() { return get<int32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  int64_t i64() { return get<int64_t>(); }
  double f64() { return get<double>(); }
  std::string str() {
    uint32_t n = u32();
    if (!take(n)) return {};
    return std::string(reinterpret_cast<const char*>(in_.data() + pos_ - n), n);
  }
  // A count of records that each take at least `min_record_bytes`: more
  // than the remaining bytes can hold is an error (no huge allocations from
  // a corrupt count).
  uint32_t count(size_t min_record_bytes) {
    uint32_t n = u32();
    if (ok() && uint64_t(n) * min_record_bytes > remaining()) fail();
    return ok() ? n : 0;
  }

  bool ok() const { return !failed_; }
  size_t position() const { return failed_ ? fail_pos_ : pos_; }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  template <typename T>
  T get() {
    T v{};
    if (take(sizeof(T))) std::memcpy(&v, in_.data() + pos_ - sizeof(T), sizeof(T));
    return v;
  }
  bool take(size_t n) {
    if (failed_) return false;
    if (n > remaining()) {
      fail();
      return false;
    }
    pos_ += n;
    return true;
  }
  void fail() {
    if (!failed_) fail_pos_ = pos_;
    failed_ = true;
  }

  std::span<const std::byte> in_;
  size_t pos_ = 0;
  size_t fail_pos_ = 0;
  bool failed_ = false;
};

}  // namespace onyx::checkpoint
