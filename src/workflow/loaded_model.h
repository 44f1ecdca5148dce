// A model loaded with its tokenizer and the prompt's token ids, from what the options shared by
// every command that runs a model chose (--model, --tokenizer, --prompt, --prompt-ids; registered
// by src/cli/model_args.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/model/model.h"
#include "src/tokenizer/tokenizer.h"

namespace ds {

struct ModelArgs {
  std::string model;      // empty = the bundled kjv-llama
  std::string tokenizer;  // empty = found beside the model
  std::optional<std::string> prompt;
  std::optional<std::string> prompt_ids;  // "1,2,3"
  bool no_special_in_text = false;        // special-token markup in prompts is plain text
};

// A loaded model with its tokenizer (when one is needed) and the prompt's token ids.
struct LoadedModel {
  Model model;
  std::unique_ptr<Tokenizer> tokenizer;  // null only when not needed and not found (or damaged)
  std::filesystem::path tokenizer_path;
  // A tokenizer that was found (beside the model) but could not be loaded, when none was
  // needed: why (its own error, e.g. "tokenizer.json: not valid JSON at line 2, ..."), for the
  // message of whatever needs one later, and for the note of a command that goes on without it.
  std::optional<Error> tokenizer_error;
  std::vector<int32_t> prompt;  // empty when want_prompt was false

  // BOS / EOS: the tokenizer's when it declares them, else the model config's.
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  // The token that ends generation by the model format's convention: BOS (id 1) for a llama2.c
  // .bin, as llama2.c's run.c ("the BOS token delimits sequences"); EOS for Hugging Face.
  std::optional<int32_t> format_stop_id() const;
};

// Loads the model and, when found, its tokenizer (an error when `need_tokenizer`, the prompt is
// text, or --tokenizer was given, and it cannot be loaded); with
// `want_prompt`, encodes the prompt (BOS per the tokenizer's config; no prompt = BOS only) or
// parses --prompt-ids.
LoadedModel load_model_and_prompt(const ModelArgs& args, bool need_tokenizer,
                                  bool want_prompt = true);

// Parses token ids separated by commas and/or spaces ("1,2,3", "1 2 3"); throws ds::Error
// naming the bad item. An empty string gives an empty list.
std::vector<int32_t> parse_id_list(const std::string& s);

}  // namespace ds
