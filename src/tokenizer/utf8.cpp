// Small UTF-8 and byte-piece helpers shared by the tokenizers (see utf8.h).
#include "src/tokenizer/utf8.h"

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
  return !utf8_first_invalid(text).has_value();
}

std::optional<size_t> utf8_first_invalid(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {  // ASCII, the common case
      ++pos;
      continue;
    }
    const auto c = utf8_decode_char(text, pos);
    if (!c) return pos;
    pos += c->length;
  }
  return std::nullopt;
}

namespace {

// How many bytes of a well-formed sequence start at text[pos] (Unicode Table 3-7): 0 for a byte
// that starts none; else the number of leading bytes that fit, which is the full length when the
// character is complete.
size_t utf8_valid_prefix(std::string_view text, size_t pos, size_t& full_length) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  unsigned char low = 0x80, high = 0xBF;  // range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    full_length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    full_length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    full_length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    full_length = 1;
    return 0;
  }
  size_t n = 1;
  for (; n < full_length && pos + n < text.size(); ++n) {
    const auto byte = static_cast<unsigned char>(text[pos + n]);
    const bool fits = n == 1 ? (byte >= low && byte <= high) : utf8_is_continuation(byte);
    if (!fits) break;
  }
  return n;
}

}  // namespace

std::string utf8_make_valid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t pos = 0; pos < bytes.size();) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      out.push_back(bytes[pos++]);
      continue;
    }
    size_t full_length = 0;
    const size_t n = utf8_valid_prefix(bytes, pos, full_length);
    if (n == full_length) {
      out.append(bytes, pos, n);
      pos += n;
    } else {
      out += kUtf8Replacement;
      pos += n == 0 ? 1 : n;
    }
  }
  return out;
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
