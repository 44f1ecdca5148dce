// Unicode services for the tokenizers, from ICU: normalization forms and the character
// properties Hugging Face's added-token matching uses (White_Space, \w).
#pragma once

#include <string>
#include <string_view>

namespace ds {

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };

// `text` (valid UTF-8) in the normalization form.
std::string unicode_normalize(std::string_view text, NormalForm form);

// Every character replaced by its full lowercase mapping, one character at a time with no
// context (Rust's char::to_lowercase, so a final capital sigma becomes σ, not ς).
std::string unicode_lowercase(std::string_view text);

// The White_Space property (Rust's char::is_whitespace).
bool unicode_is_whitespace(char32_t c);

// A "word" character as regex \w has it in Unicode mode (UTS #18: Alphabetic, marks, decimal
// digits, connector punctuation, Join_Control), which the Rust regex crate follows.
bool unicode_is_word(char32_t c);

// "ICU 72.1, Unicode 15.0", for documentation and diagnostics.
std::string unicode_library_version();

}  // namespace ds
