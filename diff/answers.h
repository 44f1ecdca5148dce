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

// One expected answer per line, in prompt order (a trailing newline is not an extra answer).
// Throws ds::Error with a hint when the file cannot be read.
std::vector<std::string> read_answer_key(const std::string& path);

}  // namespace ds::diff
