// The model options' choice resolved into a loaded model, its tokenizer and the prompt ids.
#include "src/workflow/loaded_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "common/error.h"
#include "src/console/output.h"
#include "src/tokenizer/load.h"

namespace ds {

std::vector<int32_t> parse_id_list(const std::string& s) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while ((pos = s.find_first_not_of(" ,\t\n", pos)) != std::string::npos) {
    const size_t end = std::min(s.find_first_of(" ,\t\n", pos), s.size());
    const std::string item = s.substr(pos, end - pos);
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 0 || v > INT32_MAX) {
      throw Error(fmt::format("'{}' in the token id list is not a token id", item),
                  "token ids are non-negative integers separated by commas or spaces, e.g. "
                  "1,403,407");
    }
    ids.push_back(static_cast<int32_t>(v));
    pos = end;
  }
  return ids;
}

std::optional<int32_t> LoadedModel::bos_id() const {
  if (tokenizer && tokenizer->bos_id()) return tokenizer->bos_id();
  return model.config.bos_id;
}

std::optional<int32_t> LoadedModel::eos_id() const {
  if (tokenizer && tokenizer->eos_id()) return tokenizer->eos_id();
  return model.config.eos_id;
}

std::optional<int32_t> LoadedModel::format_stop_id() const {
  return model.format == ModelFormat::Llama2c ? bos_id() : eos_id();
}

LoadedModel load_model_and_prompt(const ModelArgs& args, bool need_tokenizer, bool want_prompt) {
  LoadedModel lm;
  lm.model =
      load_model(args.model.empty() ? default_model_path() : std::filesystem::path(args.model));
  const bool text_prompt = want_prompt && !args.prompt_ids.has_value();
  const bool required = need_tokenizer || text_prompt || !args.tokenizer.empty();
  try {  // without a need for one, a tokenizer is still loaded when found (for decoding, traces)
    lm.tokenizer_path =
        args.tokenizer.empty() ? find_tokenizer(lm.model) : std::filesystem::path(args.tokenizer);
  } catch (const Error&) {
    if (required) throw;
  }
  if (!lm.tokenizer_path.empty()) {
    try {
      lm.tokenizer = load_tokenizer(lm.tokenizer_path, lm.model.config.vocab_size);
    } catch (const Error& e) {
      if (required) throw;
      // found but damaged: the cause whatever needs a tokenizer later gives, and the note of a
      // command that goes on without one
      lm.tokenizer_error = e;
      lm.tokenizer_path.clear();
    }
  }
  if (lm.tokenizer && lm.tokenizer->vocab_size() < lm.model.config.vocab_size) {
    // Legitimate (vocabularies padded to a multiple of 64 or 128), but the ids past the
    // tokenizer's have no text: said once, and shown as <id> wherever text is decoded.
    print_note(
        "note: the tokenizer has {} token ids, the model's vocabulary {}: ids from {} on "
        "have no text and are shown as <id>\n",
        lm.tokenizer->vocab_size(), lm.model.config.vocab_size, lm.tokenizer->vocab_size());
  }
  if (!want_prompt) return lm;
  if (text_prompt) {
    const int ctx = lm.model.config.max_seq_len;  // + 1: --add-bos off may drop one
    try {
      lm.prompt = lm.tokenizer->encode(args.prompt.value_or(""),
                                       EncodeOptions{.add_special = true,
                                                     .special_in_text = !args.no_special_in_text,
                                                     .max_tokens = static_cast<size_t>(ctx) + 1});
    } catch (const TooManyTokens& e) {
      throw Error(fmt::format("the prompt has more than {} tokens, more than the context of {} "
                              "positions",
                              e.max_tokens(), ctx),
                  "shorten the prompt");
    }
    if (lm.prompt.empty()) {
      throw Error("the prompt encodes to no tokens and the tokenizer adds no BOS",
                  "give a non-empty --prompt or --prompt-ids");
    }
  } else {
    lm.prompt = parse_id_list(*args.prompt_ids);
    if (lm.prompt.empty())
      throw Error("--prompt-ids is empty", "give at least one token id, e.g. 1");
    check_token_ids(lm.prompt, lm.model.config.vocab_size);
  }
  return lm;
}

}  // namespace ds
