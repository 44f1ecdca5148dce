// Small UTF-8 helpers shared by the tokenizers: continuation bytes, one code point, validity,
// lossy repair, and the "<0xXX>" byte-fallback pieces of SentencePiece-style vocabularies.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ds {

// U+FFFD REPLACEMENT CHARACTER, what decoders put in place of bytes that are not valid UTF-8.
inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";

// True for 10xxxxxx, the bytes that continue a multi-byte sequence.
inline bool utf8_is_continuation(unsigned char byte) {
  return (byte & 0xC0) == 0x80;
}

struct Utf8Char {
  char32_t code_point;
  size_t length;  // bytes, 1..4
};

// Decodes the code point that starts at text[pos]. Returns nullopt when the bytes there are not
// well-formed UTF-8 (stray continuation byte, truncated or overlong sequence, surrogate, or a
// value above U+10FFFF), following the Unicode definition that Rust's str and Python use.
std::optional<Utf8Char> utf8_decode_char(std::string_view text, size_t pos);

// True when the whole text is well-formed UTF-8.
bool utf8_is_valid(std::string_view text);

// The offset of the first byte that does not begin a well-formed character; nullopt when the
// whole text is well-formed.
std::optional<size_t> utf8_first_invalid(std::string_view text);

// `bytes` with every ill-formed part replaced by U+FFFD, one per maximal subpart of an ill-formed
// sequence (the W3C / Unicode "substitution of maximal subparts" practice that Rust's
// String::from_utf8_lossy and Python's decode(errors="replace") follow): "\xE4\xB8" (a cut-off
// character) is one U+FFFD, "\xFF\xFF" two.
std::string utf8_make_valid(std::string_view bytes);

// SentencePiece byte_fallback vocabularies hold one piece per byte, spelled "<0xE4>" (two
// upper-case hex digits). byte_piece(0xE4) == "<0xE4>"; parse_byte_piece("<0xE4>") == 0xE4 (either
// case of hex digits is accepted, as Hugging Face's ByteFallback decoder does); anything else ->
// nullopt.
std::string byte_piece(unsigned char byte);
std::optional<unsigned char> parse_byte_piece(std::string_view piece);

}  // namespace ds
