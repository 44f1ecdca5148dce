// Small UTF-8 and byte-piece helpers shared by the tokenizers (see utf8.h).
#include "src/utf8.h"

namespace ds {

std::optional<Utf8Char> utf8_decode_char(std::string_view text, size_t pos) {
  if (pos >= text.size()) return std::nullopt;
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return Utf8Char{lead, 1};

  size_t length;
  char32_t cp;
  char32_t min_value;  // smaller values would be overlong encodings
  if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, min_value = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, min_value = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, min_value = 0x10000;
  } else {
    return std::nullopt;  // a continuation byte, or 0xF8..0xFF
  }
  if (text.size() - pos < length) return std::nullopt;
  for (size_t i = 1; i < length; ++i) {
    const auto byte = static_cast<unsigned char>(text[pos + i]);
    if (!utf8_is_continuation(byte)) return std::nullopt;
    cp = (cp << 6) | (byte & 0x3F);
  }
  if (cp < min_value || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
  return Utf8Char{cp, length};
}

bool utf8_is_valid(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const auto c = utf8_decode_char(text, pos);
    if (!c) return false;
    pos += c->length;
  }
  return true;
}

namespace {
constexpr char kHexDigits[] = "0123456789ABCDEF";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}
}  // namespace

std::string byte_piece(unsigned char byte) {
  return {'<', '0', 'x', kHexDigits[byte >> 4], kHexDigits[byte & 0xF], '>'};
}

std::optional<unsigned char> parse_byte_piece(std::string_view piece) {
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece[5] != '>') return std::nullopt;
  const int high = hex_value(piece[3]), low = hex_value(piece[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return static_cast<unsigned char>(high * 16 + low);
}

}  // namespace ds
