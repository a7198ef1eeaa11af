// json_writer.h: the one JSON writer (writing only; the CLI parses what it
// reads in cli/json.h). The C API's reports, the CLI's `--json` output and
// the conformance reports all come out of it.
//
// Thread-safety: a JsonWriter is a plain value; use each from one thread.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace onyx::util {

class JsonWriter {
 public:
  // Compact output: {"a":1,"b":[2,3]}.
  JsonWriter() = default;
  // Output for people and line-oriented tools: a container nested fewer than
  // `line_depth` levels deep puts each member on its own line (two spaces of
  // indent a level); deeper ones stay on one line with ", " and ": ". With
  // line_depth 2, each record of a top-level list is one line.
  explicit JsonWriter(int line_depth) : line_depth_(line_depth) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  template <std::integral T>
  JsonWriter& value(T i) {
    if constexpr (std::is_signed_v<T>) return literal(std::to_string(int64_t(i)));
    else return literal(std::to_string(uint64_t(i)));
  }
  // NaN and infinities, which JSON cannot express, are written as null.
  JsonWriter& value(double d, int significant_digits = 17);
  JsonWriter& null();
  // Splices text that is already JSON (e.g. a report from the C API) as one value.
  JsonWriter& raw(std::string_view json);

  const std::string& str() const { return out_; }

 private:
  struct Container {
    bool on_lines;  // each member on its own line
    bool empty = true;
  };
  JsonWriter& open(char bracket);
  JsonWriter& close(char bracket);
  JsonWriter& literal(const std::string& text);
  void before_value();
  void new_line(size_t depth);

  std::string out_;
  std::vector<Container> open_;
  int line_depth_ = 0;
  bool after_key_ = false;
};

// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

}  // namespace onyx::util
