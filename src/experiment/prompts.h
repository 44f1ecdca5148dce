// Prompt lists for `driftscope run --prompts FILE`: one prompt per line, or JSONL objects with
// "text" or "ids".
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/tokenizer/tokenizer.h"

namespace ds {

struct Prompt {
  std::optional<std::string> text;  // as written (absent for "ids" prompts)
  std::vector<int32_t> ids;         // what the model consumes
  // Teacher forcing (run --force-tokens): the continuation to consume instead of the model's
  // own choices; max_new does not apply.
  std::optional<std::vector<int32_t>> forced = std::nullopt;
};

// Reads FILE (a leading UTF-8 byte order mark skipped): a line starting with '{' is a JSON
// object {"text": "..."} or {"ids": [..]}, never both; any other non-empty line is text ("\n"
// inside text must be written in JSONL). Text is encoded with `tok` (add_special per its config);
// ids are used as given. {"ids": [..], "forced": [..]} also sets the prompt's forced continuation
// (teacher forcing, as run --force-tokens; zoom writes such files). Throws ds::Error naming the
// line for malformed input or when text needs a tokenizer that is absent: `why_no_tokenizer`, when
// given, is why there is none (the tokenizer beside the model fails to load: its own error, which
// the message then gives). With special_in_text false, special-token markup in text is encoded as
// plain text.
//
// Bounded by the work, not by the file: at most kMaxPrompts prompts, and a text prompt that
// takes more than `context` + 1 ids (it cannot fit a model of that context even when
// --add-bos off drops its BOS) is refused by its line as soon as the tokenizer knows it
// (EncodeOptions::max_tokens), before a long line's merges fill memory.
inline constexpr size_t kMaxPrompts = 100'000;
std::vector<Prompt> read_prompts_file(const std::filesystem::path& path, const Tokenizer* tok,
                                      bool special_in_text = true, int context = INT_MAX,
                                      const std::optional<Error>& why_no_tokenizer = std::nullopt);

// The add_bos knob: automatic ("auto") leaves prompts as encoded (text: the tokenizer's config;
// ids: as given); on puts `bos` first where it is missing; off removes a leading `bos`.
enum class AddBos { automatic, on, off };
// Throws ds::Error when on is asked and the model has no BOS token.
void apply_add_bos(std::vector<Prompt>& prompts, AddBos policy, std::optional<int32_t> bos);

}  // namespace ds
