// json.h: just enough JSON parsing for the CLI: the reports the C API returns
// (providers, partition, memory). `--json` output is written with
// onyx/util/json_writer.h (JsonWriter, included here for the commands).
#pragma once

#include <onyx/util/json_writer.h>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace onyx::cli {

using util::JsonWriter;

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;  // keeps the source order

  Json() = default;  // null
  explicit Json(bool b) : value_(b) {}
  explicit Json(double d) : value_(d) {}
  explicit Json(std::string s) : value_(std::move(s)) {}
  explicit Json(Array a) : value_(std::move(a)) {}
  explicit Json(Object o) : value_(std::move(o)) {}

  // Throws CliError with the offset of the first syntax error.
  static Json parse(const std::string& text);

  bool is_null() const { return std::holds_alternative<std::monostate>(value_); }
  bool is_array() const { return std::holds_alternative<Array>(value_); }
  bool is_object() const { return std::holds_alternative<Object>(value_); }

  // Lenient accessors for report fields: a missing key or a different type
  // gives the fallback, so an older or newer runtime's report still prints.
  const Json& operator[](const std::string& key) const;
  const Array& items() const;
  const Object& members() const;  // an object's (key, value) pairs in source order
  std::string str(const std::string& fallback = "") const;
  double num(double fallback = 0) const;
  bool boolean(bool fallback = false) const;

 private:
  std::variant<std::monostate, bool, double, std::string, Array, Object> value_;
};

}  // namespace onyx::cli
