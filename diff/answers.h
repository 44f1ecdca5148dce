// Answers for the N-way statistics: the user's extraction rule (a regular expression with exactly
// one capture group) and the answer key (one expected answer per prompt).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ds::diff {

// Matched with PCRE2 (the syntax of Perl and ECMAScript regexes: '(\d+)', '(?:x)'; '$' is the end
// of the text), under a bound on the work of one match: a pattern that backtracks
// catastrophically on an output ('(a+)+$') ends with an error within about a second, never a hang.
class AnswerRule {
 public:
  // Throws ds::Error with a hint for a pattern that does not compile or that has no capture
  // group, or more than one.
  explicit AnswerRule(const std::string& pattern);
  ~AnswerRule();
  AnswerRule(AnswerRule&&) noexcept;
  AnswerRule& operator=(AnswerRule&&) noexcept;
  AnswerRule(const AnswerRule&) = delete;
  AnswerRule& operator=(const AnswerRule&) = delete;

  // The capture group of the last match in `text` (answers come last), or nullopt. Throws
  // ds::Error with a hint when one match passes the bound.
  std::optional<std::string> extract(const std::string& text) const;

  // The most backtracking steps one match may take (PCRE2's match limit).
  static constexpr uint32_t kMatchLimit = 5'000'000;

 private:
  std::string pattern_;
  struct Compiled;
  std::unique_ptr<Compiled> re_;
};

// The answer key `text` (the file `name`, read by the caller with its bound): one expected
// answer per line, in prompt order (a trailing newline is not an extra answer; "\r\n" ends a line
// too). Throws ds::Error with a hint when it holds no answer or a line is empty or blank.
std::vector<std::string> parse_answer_key(const std::string& text, const std::string& name);

}  // namespace ds::diff
