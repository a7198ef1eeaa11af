// json_writer.cpp: see json_writer.h.
#include "onyx/util/json_writer.h"

#include <cmath>
#include <cstdio>

namespace onyx::util {

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void JsonWriter::new_line(size_t depth) {
  out_ += '\n';
  out_.append(2 * depth, ' ');
}

// Writes what goes between the previous member and the next one.
void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (open_.empty()) return;
  Container& c = open_.back();
  if (!c.empty) out_ += ',';
  if (c.on_lines) new_line(open_.size());
  else if (!c.empty && line_depth_ > 0) out_ += ' ';
  c.empty = false;
}

JsonWriter& JsonWriter::open(char bracket) {
  before_value();
  out_ += bracket;
  open_.push_back({int(open_.size()) < line_depth_});
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  if (open_.back().on_lines && !open_.back().empty) new_line(open_.size() - 1);
  out_ += bracket;
  open_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  before_value();
  out_ += json_quote(k);
  out_ += line_depth_ > 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  out_ += json_quote(s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) { return literal(b ? "true" : "false"); }

JsonWriter& JsonWriter::value(double d, int significant_digits) {
  if (!std::isfinite(d)) return null();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", significant_digits, d);
  return literal(buf);
}

JsonWriter& JsonWriter::null() { return literal("null"); }

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_ += json;
  return *this;
}

JsonWriter& JsonWriter::literal(const std::string& text) {
  before_value();
  out_ += text;
  return *this;
}

}  // namespace onyx::util
