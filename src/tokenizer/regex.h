// Unicode regular expressions through PCRE2 (UTF + UCP mode, JIT-compiled): the engine behind the
// tokenizer.json Split / Replace patterns, which need \p{L}, \p{N}, (?i:...) and look-ahead.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds {

class Regex {
 public:
  // Compiles `pattern` (UTF-8). Throws ds::Error naming the pattern, PCRE2's message and the
  // offset of the fault, with `where` (e.g. "tokenizer.json pre_tokenizer Split") in front.
  Regex(std::string_view pattern, std::string_view where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  Regex(Regex&& other) noexcept;
  Regex& operator=(Regex&&) = delete;

  using Span = std::pair<size_t, size_t>;  // [begin, end) byte offsets

  // Appends the non-overlapping matches in `text`, left to right, to `out`. `text` must be valid
  // UTF-8 (not checked again here). Empty matches are not reported: the search moves on by one
  // character after one. Safe to call from several threads at once.
  void find_all(std::string_view text, std::vector<Span>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

}  // namespace ds
