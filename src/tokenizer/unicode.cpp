// ICU-backed Unicode normalization and character properties (see unicode.h).
#include "src/tokenizer/unicode.h"

#include <fmt/format.h>
#include <unicode/bytestream.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/uversion.h>

#include "common/error.h"
#include "src/tokenizer/utf8.h"

namespace ds {
namespace {

const icu::Normalizer2& normalizer(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNFC:
      n = icu::Normalizer2::getNFCInstance(status);
      break;
    case NormalForm::kNFD:
      n = icu::Normalizer2::getNFDInstance(status);
      break;
    case NormalForm::kNFKC:
      n = icu::Normalizer2::getNFKCInstance(status);
      break;
    case NormalForm::kNFKD:
      n = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  if (U_FAILURE(status) || n == nullptr) {
    throw Error(fmt::format("ICU has no normalizer data ({})", u_errorName(status)),
                "the ICU data library (libicudata) is missing or damaged");
  }
  return *n;
}

}  // namespace

std::string unicode_normalize(std::string_view text, NormalForm form) {
  const icu::Normalizer2& n = normalizer(form);
  const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  UErrorCode status = U_ZERO_ERROR;
  // Most text is already normalized; checking is cheaper than rewriting.
  if (n.isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  std::string out;
  icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(text.size()));
  n.normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status)) {
    throw Error(fmt::format("Unicode normalization failed ({})", u_errorName(status)),
                "the text must be valid UTF-8");
  }
  return out;
}

std::string unicode_lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const auto byte = static_cast<unsigned char>(text[pos]);
    if (byte < 0x80) {  // ASCII
      out.push_back(static_cast<char>(byte >= 'A' && byte <= 'Z' ? byte + ('a' - 'A') : byte));
      ++pos;
      continue;
    }
    const Utf8Char c = *utf8_decode_char(text, pos);
    pos += c.length;
    // One character at a time, so that no context-sensitive rule applies.
    icu::UnicodeString s(static_cast<UChar32>(c.code_point));
    s.toLower(icu::Locale::getRoot());
    s.toUTF8String(out);
  }
  return out;
}

bool unicode_is_whitespace(char32_t c) {
  return u_isUWhiteSpace(static_cast<UChar32>(c));
}

bool unicode_is_word(char32_t c) {
  const auto cp = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(cp, UCHAR_ALPHABETIC) || u_hasBinaryProperty(cp, UCHAR_JOIN_CONTROL)) {
    return true;
  }
  const int32_t mask = U_GET_GC_MASK(cp);
  return (mask & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

std::string unicode_library_version() {
  UVersionInfo unicode;
  u_getUnicodeVersion(unicode);
  return fmt::format("ICU {}, Unicode {}.{}", U_ICU_VERSION, unicode[0], unicode[1]);
}

}  // namespace ds
