// The added tokens of tokenizer.json ("added_tokens": <|im_start|>, <s>, <think>, ...): found in
// the text before the model sees it, so that chat markup becomes single ids. As AddedVocabulary of
// huggingface/tokenizers: tokens with normalized=false are matched in the raw text, those with
// normalized=true in the normalized text; leftmost-longest; lstrip / rstrip swallow the whitespace
// beside a match; single_word needs non-word characters (or the text's ends) on both sides.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/tokenizer/normalizer.h"

namespace ds::hf {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;  // skipped by decode; matched in text only when special tokens are
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

// A part of the input: an added token's id, or normalized text for the pre-tokenizer.
struct Segment {
  std::optional<int32_t> id;
  std::string text;        // normalized; empty for an added token
  bool at_origin = false;  // text that starts where the input starts
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // `normalizer` gives the patterns of the normalized=true tokens (their normalized content).
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer& normalizer);

  // Cuts `text` at the added tokens and normalizes the text between them. With
  // match_special = false, special tokens are left in the text as plain characters (the
  // reference's encode_special_tokens); non-special added tokens are still matched.
  std::vector<Segment> split(std::string_view text, const Normalizer& normalizer,
                             bool match_special) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // Leftmost-longest matching of a set of strings, tried in the order of their first byte.
  class Matcher {
   public:
    void add(std::string pattern, size_t token_index);
    void finish();  // sorts each first-byte bucket longest first
    // Whether some pattern starts with this byte (a quick test before longest_at).
    bool may_start(unsigned char byte) const {
      return bucket_begin_[byte] != bucket_begin_[byte + 1];
    }
    // The longest pattern that starts at text[pos], as (length, token index).
    std::optional<std::pair<size_t, size_t>> longest_at(std::string_view text, size_t pos) const;
    bool empty() const { return patterns_.empty(); }

   private:
    std::vector<std::pair<std::string, size_t>> patterns_;
    std::vector<uint32_t> bucket_begin_ = std::vector<uint32_t>(257, 0);  // range per first byte
  };

  // find_matches of the reference: (token index or none, begin, end) covering `text`.
  struct Cut {
    std::optional<size_t> token;
    size_t begin, end;
  };
  std::vector<Cut> find(std::string_view text, const Matcher& matcher, bool match_special) const;

  std::vector<AddedToken> tokens_;
  Matcher raw_;         // normalized=false tokens, by their content
  Matcher normalized_;  // normalized=true tokens, by their normalized content
};

}  // namespace ds::hf
