// GPT-2's bytes_to_unicode(), computed (see tokenizer_hf_byte_level.h): the printable bytes
// '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves; the other 68 bytes, in increasing
// order, become U+0100, U+0101, ...
#include "src/tokenizer/byte_level.h"

#include <array>

namespace ds::hf {
namespace {

struct ByteLevelTables {
  std::array<std::array<char, 2>, 256> char_of_byte;  // UTF-8 of the character for each byte
  std::array<uint8_t, 256> char_length;               // 1 or 2: every character is below U+0800
  std::array<int16_t, 256 + 68> byte_of_char;         // indexed by code point; -1 where none

  ByteLevelTables() {
    byte_of_char.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const char32_t c = printable ? static_cast<char32_t>(b) : next++;
      byte_of_char[c] = static_cast<int16_t>(b);
      if (c < 0x80) {
        char_of_byte[b] = {static_cast<char>(c), 0};
        char_length[b] = 1;
      } else {
        char_of_byte[b] = {static_cast<char>(0xC0 | (c >> 6)),
                           static_cast<char>(0x80 | (c & 0x3F))};
        char_length[b] = 2;
      }
    }
  }
};

const ByteLevelTables& tables() {
  static const ByteLevelTables t;
  return t;
}

}  // namespace

void byte_level_encode(std::string_view bytes, std::string& out) {
  const ByteLevelTables& t = tables();
  size_t n = out.size();
  out.resize(n + 2 * bytes.size());
  for (char b : bytes) {
    const auto byte = static_cast<uint8_t>(b);
    out[n] = t.char_of_byte[byte][0];
    out[n + 1] = t.char_of_byte[byte][1];  // overwritten next when the character has one byte
    n += t.char_length[byte];
  }
  out.resize(n);
}

std::optional<uint8_t> byte_level_byte(char32_t c) {
  const ByteLevelTables& t = tables();
  if (c >= t.byte_of_char.size() || t.byte_of_char[c] < 0) return std::nullopt;
  return static_cast<uint8_t>(t.byte_of_char[c]);
}

}  // namespace ds::hf
