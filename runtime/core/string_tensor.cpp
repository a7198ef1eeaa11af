// string_tensor.cpp: STRING tensors (see string_tensor.h).
#include "core/string_tensor.h"

#include <algorithm>
#include <memory>

namespace onyx::runtime {

Tensor make_string_tensor(Shape dims, std::vector<std::string> strings) {
  auto owned = std::make_shared<std::vector<std::string>>(std::move(strings));
  owned->resize(size_t(std::max<int64_t>(element_count(dims), 0)));
  return Tensor::wrap(ONYX_DTYPE_STRING, std::move(dims), owned->data(), owned);
}

std::span<const std::string> strings_of(const Tensor& t) {
  if (t.dtype() != ONYX_DTYPE_STRING || !t.data()) return {};
  return {t.data_as<const std::string>(), size_t(t.size())};
}

size_t invalid_utf8_offset(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : 4;
    if (extra == 4 || c == 0xC0 || c == 0xC1 || c > 0xF4) return i;  // a stray continuation byte, or never valid
    if (extra && i + extra >= s.size()) return i;                     // cut short
    uint32_t cp = extra == 0 ? c : c & (0x3F >> extra);
    for (size_t k = 1; k <= extra; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    const bool overlong = (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += extra + 1;
  }
  return std::string_view::npos;
}

Status check_utf8(const Tensor& t, const std::string& what) {
  std::span<const std::string> strings = strings_of(t);
  for (size_t k = 0; k < strings.size(); ++k)
    if (size_t at = invalid_utf8_offset(strings[k]); at != std::string_view::npos)
      return invalid_argument(what + ": string element " + std::to_string(k) + " is not valid UTF-8 (byte " +
                              std::to_string(at) + ")");
  return Status();
}

}  // namespace onyx::runtime
