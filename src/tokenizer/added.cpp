// Added-token matching (see tokenizer_hf_added.h), after AddedVocabulary::find_matches and
// extract_and_normalize of huggingface/tokenizers.
#include "src/tokenizer/added.h"

#include <algorithm>

#include "src/tokenizer/unicode.h"
#include "src/tokenizer/utf8.h"

namespace ds::hf {
namespace {

// The code point that ends text[..end] (valid UTF-8, end > 0).
char32_t last_char(std::string_view text, size_t end) {
  size_t begin = end - 1;
  while (begin > 0 && utf8_is_continuation(static_cast<unsigned char>(text[begin]))) --begin;
  return utf8_decode_char(text, begin)->code_point;
}

// Where the whitespace that ends text[..end] begins.
size_t whitespace_begin_before(std::string_view text, size_t end) {
  while (end > 0) {
    size_t begin = end - 1;
    while (begin > 0 && utf8_is_continuation(static_cast<unsigned char>(text[begin]))) --begin;
    if (!unicode_is_whitespace(utf8_decode_char(text, begin)->code_point)) break;
    end = begin;
  }
  return end;
}

// Where the whitespace that starts text[begin..] ends.
size_t whitespace_end_after(std::string_view text, size_t begin) {
  while (begin < text.size()) {
    const Utf8Char c = *utf8_decode_char(text, begin);
    if (!unicode_is_whitespace(c.code_point)) break;
    begin += c.length;
  }
  return begin;
}

}  // namespace

void AddedVocabulary::Matcher::add(std::string pattern, size_t token_index) {
  if (!pattern.empty()) patterns_.emplace_back(std::move(pattern), token_index);
}

void AddedVocabulary::Matcher::finish() {
  // By first byte, then longest first; equal patterns keep their order (the first one wins).
  std::stable_sort(patterns_.begin(), patterns_.end(), [](const auto& a, const auto& b) {
    const auto fa = static_cast<unsigned char>(a.first[0]),
               fb = static_cast<unsigned char>(b.first[0]);
    if (fa != fb) return fa < fb;
    return a.first.size() > b.first.size();
  });
  bucket_begin_.assign(257, 0);
  for (const auto& p : patterns_) ++bucket_begin_[static_cast<unsigned char>(p.first[0]) + 1];
  for (size_t b = 1; b < bucket_begin_.size(); ++b) bucket_begin_[b] += bucket_begin_[b - 1];
}

std::optional<std::pair<size_t, size_t>> AddedVocabulary::Matcher::longest_at(std::string_view text,
                                                                              size_t pos) const {
  const auto first = static_cast<unsigned char>(text[pos]);
  const std::string_view rest = text.substr(pos);
  for (uint32_t i = bucket_begin_[first]; i < bucket_begin_[first + 1]; ++i) {
    if (rest.starts_with(patterns_[i].first)) {
      return std::pair{patterns_[i].first.size(), patterns_[i].second};
    }
  }
  return std::nullopt;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer& normalizer)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    if (t.normalized) {
      normalized_.add(normalizer.apply(t.content), i);
    } else {
      raw_.add(t.content, i);
    }
  }
  raw_.finish();
  normalized_.finish();
}

std::vector<AddedVocabulary::Cut> AddedVocabulary::find(std::string_view text,
                                                        const Matcher& matcher,
                                                        bool match_special) const {
  std::vector<Cut> cuts;
  size_t start_offset = 0;  // end of the last kept match
  size_t pos = 0;
  while (pos < text.size() && !matcher.empty()) {
    if (!matcher.may_start(static_cast<unsigned char>(text[pos]))) {
      ++pos;
      continue;
    }
    const auto match = matcher.longest_at(text, pos);
    if (!match) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[match->second];
    size_t begin = pos, end = pos + match->first;
    pos = end;  // the search goes on after this match, whether it is kept or not
    if (token.special && !match_special) continue;
    if (token.single_word) {
      const bool word_before = begin > 0 && unicode_is_word(last_char(text, begin));
      const bool word_after =
          end < text.size() && unicode_is_word(utf8_decode_char(text, end)->code_point);
      if (word_before || word_after) continue;
    }
    // lstrip takes the whitespace before the match, but not what an earlier match took.
    if (token.lstrip) begin = std::max(whitespace_begin_before(text, begin), start_offset);
    if (token.rstrip) end = whitespace_end_after(text, end);
    if (start_offset < begin) cuts.push_back({std::nullopt, start_offset, begin});
    cuts.push_back({match->second, begin, end});
    start_offset = end;
    pos = end;
  }
  if (start_offset < text.size()) cuts.push_back({std::nullopt, start_offset, text.size()});
  return cuts;
}

std::vector<Segment> AddedVocabulary::split(std::string_view text, const Normalizer& normalizer,
                                            bool match_special) const {
  std::vector<Segment> segments;
  for (const Cut& raw : find(text, raw_, match_special)) {
    if (raw.token) {
      segments.push_back({tokens_[*raw.token].id, {}, false});
      continue;
    }
    const std::string normalized =
        normalizer.apply(std::string(text.substr(raw.begin, raw.end - raw.begin)));
    for (const Cut& cut : find(normalized, normalized_, match_special)) {
      if (cut.token) {
        segments.push_back({tokens_[*cut.token].id, {}, false});
      } else if (cut.end > cut.begin) {
        segments.push_back({std::nullopt, normalized.substr(cut.begin, cut.end - cut.begin),
                            raw.begin == 0 && cut.begin == 0});
      }
    }
  }
  return segments;
}

}  // namespace ds::hf
