// Answer extraction and the answer key.
#include "diff/answers.h"

#include <fmt/format.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <sstream>

#include "common/error.h"

namespace ds::diff {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0) {
    return fmt::format("PCRE2 error {}", code);
  }
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

// The compiled pattern, its match data and the match context that bounds one match.
struct AnswerRule::Compiled {
  pcre2_code* code = nullptr;
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  ~Compiled() {
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
    pcre2_code_free(code);
  }
};

AnswerRule::AnswerRule(const std::string& pattern) : pattern_(pattern) {
  const char* hint =
      "--extract takes a regex (Perl / ECMAScript syntax) with one capture group, e.g. 'answer "
      "is (\\w+)'";
  int error = 0;
  PCRE2_SIZE offset = 0;
  re_ = std::make_unique<Compiled>();
  // UTF with invalid sequences allowed (a decoded output may hold any bytes); '$' at the very end
  // as in ECMAScript; ECMAScript's u-escapes (PCRE2_ALT_BSUX)
  re_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                            PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY |
                                PCRE2_ALT_BSUX | PCRE2_NEVER_BACKSLASH_C,
                            &error, &offset, nullptr);
  if (re_->code == nullptr) {
    throw Error(fmt::format("extraction regex '{}' does not compile: {} at offset {}", pattern,
                            pcre2_message(error), offset),
                hint);
  }
  uint32_t groups = 0;
  pcre2_pattern_info(re_->code, PCRE2_INFO_CAPTURECOUNT, &groups);
  if (groups != 1) {
    throw Error(
        fmt::format("extraction regex '{}' has {} capture groups, not one", pattern, groups),
        "--extract needs exactly one (group) around the answer, e.g. 'answer is (\\w+)'; "
        "use (?:...) for other groups");
  }
  pcre2_jit_compile(re_->code, PCRE2_JIT_COMPLETE);  // faster; the limits hold with JIT too
  re_->data = pcre2_match_data_create_from_pattern(re_->code, nullptr);
  re_->context = pcre2_match_context_create(nullptr);
  if (re_->data == nullptr || re_->context == nullptr) throw std::bad_alloc();
  pcre2_set_match_limit(re_->context, kMatchLimit);
  pcre2_set_depth_limit(re_->context, kMatchLimit);
  pcre2_set_heap_limit(re_->context, 64 * 1024);  // KiB of backtracking memory
}

AnswerRule::~AnswerRule() = default;
AnswerRule::AnswerRule(AnswerRule&&) noexcept = default;
AnswerRule& AnswerRule::operator=(AnswerRule&&) noexcept = default;

std::optional<std::string> AnswerRule::extract(const std::string& text) const {
  std::optional<std::string> last;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(re_->code, subject, text.size(), start, 0, re_->data, re_->context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      throw Error(fmt::format("extraction regex '{}' gave up on an output of {} bytes: {}",
                              pattern_, text.size(), pcre2_message(rc)),
                  "the pattern backtracks too much (nested quantifiers such as (a+)+ grow "
                  "exponentially): make it simpler or more specific");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(re_->data);
    if (ov[2] != PCRE2_UNSET) last = text.substr(ov[2], ov[3] - ov[2]);
    if (ov[1] > ov[0]) {
      start = ov[1];
    } else {  // an empty match: step over one character
      start = ov[0] + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
        ++start;
      }
    }
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
