// Answer extraction and the answer key.
#include "diff/answers.h"

#include <fmt/format.h>

#include <sstream>

#include "common/error.h"

namespace ds::diff {

AnswerRule::AnswerRule(const std::string& pattern) {
  try {
    re_ = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error(
        fmt::format("extraction regex '{}' does not compile: {}", pattern, e.what()),
        "--extract takes an ECMAScript regex with one capture group, e.g. 'answer is (\\w+)'");
  }
  if (re_.mark_count() != 1) {
    throw Error(fmt::format("extraction regex '{}' has {} capture groups, not one", pattern,
                            re_.mark_count()),
                "--extract needs exactly one (group) around the answer, e.g. 'answer is (\\w+)'; "
                "use (?:...) for other groups");
  }
}

std::optional<std::string> AnswerRule::extract(const std::string& text) const {
  std::optional<std::string> last;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re_); it != std::sregex_iterator();
       ++it) {
    if ((*it)[1].matched) last = (*it)[1].str();
  }
  return last;
}

std::vector<std::string> parse_answer_key(const std::string& text, const std::string& name) {
  const char* hint =
      "--answers takes a text file with one expected answer per line, in prompt order";
  std::vector<std::string> key;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) {
      throw Error(fmt::format("answer key '{}': line {} is empty", name, key.size() + 1), hint);
    }
    key.push_back(std::move(line));
  }
  if (key.empty()) throw Error(fmt::format("answer key '{}' holds no answer", name), hint);
  return key;
}

}  // namespace ds::diff
