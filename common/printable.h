// Text from user input or from a file made safe to print on a terminal: control characters (ESC
// starts a terminal's escape sequences, a newline can fake a line of driftscope's own) are shown
// escaped, as C writes them.
#pragma once

#include <string>
#include <string_view>

namespace ds {

namespace printable_detail {

inline constexpr char kHex[] = "0123456789abcdef";

// Whether s[i] and s[i + 1] are a C1 control character (U+0080..U+009F) in UTF-8: C2 80..C2 9F.
inline bool c1_at(std::string_view s, size_t i) {
  return static_cast<unsigned char>(s[i]) == 0xC2 && i + 1 < s.size() &&
         static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
         static_cast<unsigned char>(s[i + 1]) <= 0x9F;
}

// "\u00NN" for the code point NN (below U+0100).
inline void append_u00(std::string& out, unsigned char c) {
  out += "\\u00";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

}  // namespace printable_detail

// `s` with every C0 control character, DEL and C1 control character (U+0080..U+009F, as UTF-8)
// written as an escape: "\n", "\t", "\r", "\e" and "\xNN" for the rest (C1: "\u0080"); a
// backslash stays as it is. With keep_newlines, '\n' passes unchanged (multi-line notes).
inline std::string printable(std::string_view s, bool keep_newlines = false) {
  using printable_detail::kHex;
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (printable_detail::c1_at(s, i)) {
      printable_detail::append_u00(out, static_cast<unsigned char>(s[++i]));
    } else if (c == '\n' && keep_newlines) {
      out += '\n';
    } else if (c < 0x20 || c == 0x7F) {
      switch (c) {
        case '\n':
          out += "\\n";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\r':
          out += "\\r";
          break;
        case 0x1B:
          out += "\\e";
          break;
        default:
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
      }
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// A JSON text (a dump of nlohmann::json, UTF-8 left as it is) made safe on a terminal: JSON
// escapes the C0 controls but leaves DEL and the C1 controls (U+0080..U+009F, e.g. the 8-bit
// CSI U+009B) raw; they are written as \u007f, \u009b, which JSON reads back as the same text.
inline std::string printable_json(std::string_view dumped) {
  std::string out;
  out.reserve(dumped.size());
  for (size_t i = 0; i < dumped.size(); ++i) {
    const auto c = static_cast<unsigned char>(dumped[i]);
    if (printable_detail::c1_at(dumped, i)) {
      printable_detail::append_u00(out, static_cast<unsigned char>(dumped[++i]));
    } else if (c == 0x7F) {
      printable_detail::append_u00(out, c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace ds
