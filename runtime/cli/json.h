// json.h: just enough JSON for the CLI: parsing the reports the C API returns
// (providers, partition, memory) and writing `--json` output.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace onyx::cli {

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
  std::string str(const std::string& fallback = "") const;
  double num(double fallback = 0) const;
  bool boolean(bool fallback = false) const;

 private:
  std::variant<std::monostate, bool, double, std::string, Array, Object> value_;
};

// Streaming writer for the CLI's own `--json` output. `raw` splices JSON that
// is already serialized (a report from the C API) as a value.
class JsonOut {
 public:
  JsonOut& begin_object();
  JsonOut& end_object();
  JsonOut& begin_array();
  JsonOut& end_array();
  JsonOut& key(const std::string& k);
  JsonOut& value(const std::string& s);
  JsonOut& value(const char* s) { return value(std::string(s)); }
  JsonOut& value(int64_t i);
  JsonOut& value(double d);
  JsonOut& value(bool b);
  JsonOut& null_value();
  JsonOut& raw(const std::string& json);
  const std::string& str() const { return out_; }

 private:
  void separate();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

std::string json_quote(const std::string& s);

}  // namespace onyx::cli
