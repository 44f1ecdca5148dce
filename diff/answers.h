// Answers for the N-way statistics: the user's extraction rule (a regular expression with exactly
// one capture group) and the answer key (one expected answer per prompt).
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace ds::diff {

class AnswerRule {
 public:
  // ECMAScript syntax. Throws ds::Error with a hint for a pattern that does not compile or that
  // has no capture group, or more than one.
  explicit AnswerRule(const std::string& pattern);
  // The capture group of the last match in `text` (answers come last), or nullopt.
  std::optional<std::string> extract(const std::string& text) const;

 private:
  std::regex re_;
};

// The answer key `text` (the file `name`, read by the caller with its bound): one expected
// answer per line, in prompt order (a trailing newline is not an extra answer; "\r\n" ends a line
// too). Throws ds::Error with a hint when it holds no answer or a line is empty or blank.
std::vector<std::string> parse_answer_key(const std::string& text, const std::string& name);

}  // namespace ds::diff
