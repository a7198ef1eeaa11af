#include "json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "command.h"

namespace onyx::cli {

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Json document() {
    Json v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 200;  // reports are shallow; this stops runaway recursion

  [[noreturn]] void fail(const std::string& what) const {
    throw CliError("malformed JSON from the runtime at offset " + std::to_string(pos_) + ": " + what);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(const char* word) {
    std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  Json value(int depth) {
    if (depth > kMaxDepth) fail("nested too deeply");
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end");
    char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Json(string());
    if (literal("true")) return Json(true);
    if (literal("false")) return Json(false);
    if (literal("null")) return Json();
    return number();
  }

  Json object(int depth) {
    expect('{');
    Json::Object members;
    if (consume('}')) return Json(std::move(members));
    do {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a key");
      std::string key = string();
      expect(':');
      members.emplace_back(std::move(key), value(depth + 1));
    } while (consume(','));
    expect('}');
    return Json(std::move(members));
  }

  Json array(int depth) {
    expect('[');
    Json::Array items;
    if (consume(']')) return Json(std::move(items));
    do items.push_back(value(depth + 1));
    while (consume(','));
    expect(']');
    return Json(std::move(items));
  }

  Json number() {
    const char* begin = s_.c_str() + pos_;
    char* end = nullptr;
    double d = std::strtod(begin, &end);
    if (end == begin) fail("unexpected character");
    pos_ += size_t(end - begin);
    return Json(d);
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("short \\u escape");
    unsigned code = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9') code |= unsigned(h - '0');
      else if (h >= 'a' && h <= 'f') code |= unsigned(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') code |= unsigned(h - 'A' + 10);
      else fail("bad \\u escape");
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          // A surrogate pair encodes one code point above U+FFFF.
          if (cp >= 0xD800 && cp < 0xDC00 && literal("\\u")) {
            unsigned low = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(std::string("bad escape \\") + e);
      }
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

const Json& null_json() {
  static const Json null;
  return null;
}

}  // namespace

Json Json::parse(const std::string& text) { return Parser(text).document(); }

const Json& Json::operator[](const std::string& key) const {
  if (const Object* o = std::get_if<Object>(&value_))
    for (const auto& [k, v] : *o)
      if (k == key) return v;
  return null_json();
}

const Json::Array& Json::items() const {
  static const Array empty;
  const Array* a = std::get_if<Array>(&value_);
  return a ? *a : empty;
}

const Json::Object& Json::members() const {
  static const Object empty;
  const Object* o = std::get_if<Object>(&value_);
  return o ? *o : empty;
}

std::string Json::str(const std::string& fallback) const {
  const std::string* s = std::get_if<std::string>(&value_);
  return s ? *s : fallback;
}

double Json::num(double fallback) const {
  const double* d = std::get_if<double>(&value_);
  return d ? *d : fallback;
}

bool Json::boolean(bool fallback) const {
  const bool* b = std::get_if<bool>(&value_);
  return b ? *b : fallback;
}

}  // namespace onyx::cli
