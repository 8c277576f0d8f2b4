#include "core/utf8.h"

#include <cstdint>

namespace evo {

size_t utf8_char_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char c = b[0];
  if (c < 0x80) return 1;
  const size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || len > s.size()) return 0;
  uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < len; ++k) {
    if ((b[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b[k] & 0x3F);
  }
  const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const size_t len = utf8_char_length(bytes.substr(i));
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(bytes.substr(i, len));
      i += len;
    }
  }
  return out;
}

namespace {
bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
}  // namespace

std::string_view utf8_prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  while (end > 0 && continuation(text[end])) --end;  // text[end] starts the first character left out
  return text.substr(0, end);
}

std::string_view utf8_suffix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t begin = text.size() - max_bytes;
  while (begin < text.size() && continuation(text[begin])) ++begin;
  return text.substr(begin);
}

}  // namespace evo
