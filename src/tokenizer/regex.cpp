// PCRE2 wrapper (see regex.h): compile once with JIT, match with per-thread match data.
#include "src/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include "common/error.h"

namespace ds {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0)
    return fmt::format("code {}", code);
  return reinterpret_cast<const char*>(buffer);
}

// Match data, a JIT stack and a match context for one thread, made on first use. The JIT
// stack grows to 8 MiB so that long runs of one character class cannot exhaust it.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  MatchState() {
    if (data == nullptr || stack == nullptr || context == nullptr) throw std::bad_alloc();
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

}  // namespace

Regex::Regex(std::string_view pattern, std::string_view where) : pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // NEVER_BACKSLASH_C: \C matches one byte even in UTF mode, so a match could end inside a
  // character and hand the BPE model, normalizers and decoders invalid UTF-8, which they do not
  // expect (the text was validated once, up front). No tokenizer pattern needs it.
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C, &error, &offset, nullptr);
  if (code == nullptr) {
    throw Error(fmt::format("{}: invalid regex '{}': {} at offset {}", where, pattern,
                            pcre2_message(error), offset),
                "the pattern must be a regular expression PCRE2 accepts (Oniguruma / Rust syntax "
                "mostly is)");
  }
  // JIT makes matching several times faster; without JIT support pcre2_match interprets.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  code_ = code;
}

Regex::~Regex() {
  pcre2_code_free(static_cast<pcre2_code*>(code_));
}

Regex::Regex(Regex&& other) noexcept
    : pattern_(std::move(other.pattern_)), code_(std::exchange(other.code_, nullptr)) {}

void Regex::find_all(std::string_view text, std::vector<Span>& out) const {
  MatchState& state = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(static_cast<const pcre2_code*>(code_), subject, text.size(), start,
                               PCRE2_NO_UTF_CHECK, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) {
      throw Error(fmt::format("regex '{}' failed on a text of {} bytes: {}", pattern_, text.size(),
                              pcre2_message(rc)),
                  "the text may be pathological for this pattern; try splitting it");
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      out.emplace_back(begin, end);
      start = end;
    } else {
      // An empty match: step over one whole UTF-8 character.
      start = begin + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
        ++start;
      }
    }
  }
}

}  // namespace ds
