// HTML escaping with UTF-8 validation (see viewer/html_escape.h).
#include "viewer/html_escape.h"

#include <cstdint>

#include "viewer/text_layout.h"

namespace ds::viewer {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes the code point at s[i]; returns its length in bytes, or 0 with `len_invalid` set to
// the maximal invalid subpart's length (at least 1) when the bytes there are not valid UTF-8.
size_t decode(std::string_view s, size_t i, uint32_t& cp, size_t& len_invalid) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n;
  uint32_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Unicode table 3-7)
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  } else {
    len_invalid = 1;
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    const uint32_t lo_k = k == 1 ? lo : 0x80, hi_k = k == 1 ? hi : 0xBF;
    if (i + k >= s.size() || b(i + k) < lo_k || b(i + k) > hi_k) {
      len_invalid = k;
      return 0;
    }
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  return n;
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t bad = 0;
    const size_t n = decode(s, i, cp, bad);
    if (n == 0) {
      out += kReplacement;
      i += bad;
      continue;
    }
    i += n;
    switch (cp) {
      case '&':
        out += "&amp;";
        continue;
      case '<':
        out += "&lt;";
        continue;
      case '>':
        out += "&gt;";
        continue;
      case '"':
        out += "&quot;";
        continue;
      case '\'':
        out += "&#39;";
        continue;
      case '\t':
      case '\n':
        out += static_cast<char>(cp);
        continue;
      default:
        break;
    }
    if (cp < 0x20) {
      append_utf8(out, 0x2400 + cp);
    } else if (cp == 0x7F) {
      append_utf8(out, 0x2421);
    } else if (cp >= 0x80 && cp <= 0x9F) {
      out += kReplacement;
    } else {
      append_utf8(out, cp);
    }
  }
  return out;
}

std::string html_quote(std::string_view s) {
  return html_escape(quote(std::string(s)));
}

}  // namespace ds::viewer
