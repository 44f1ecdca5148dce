// Tokenizer interface: text <-> token ids, for llama2.c tokenizer.bin and Hugging Face
// tokenizer.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ds {

struct EncodeOptions {
  // Add the special tokens the tokenizer's own config asks for (BOS for llama2.c; for
  // tokenizer.json what its post-processor and tokenizer_config.json's add_bos_token /
  // add_eos_token say).
  bool add_special = false;
  // Special tokens written in the text ("<|im_start|>", "<s>") become their ids, as Hugging Face
  // does by default. When false they are tokenized as plain text (Hugging Face's
  // split_special_tokens); non-special added tokens ("<think>" in Qwen3) are still matched.
  // llama2.c tokenizers never match tokens in the text (as run.c).
  bool special_in_text = true;
  // A prompt for a model of this context: encoding stops with TooManyTokens as soon as the text
  // certainly takes more ids (before the merges of a piece too long to fit: they are what costs
  // memory and time), so a megabyte line is refused in a moment, not after gigabytes of merging.
  size_t max_tokens = SIZE_MAX;
};

// Thrown by encode when the text takes more than EncodeOptions::max_tokens ids.
class TooManyTokens : public Error {
 public:
  explicit TooManyTokens(size_t max_tokens)
      : Error("the text has more than " + std::to_string(max_tokens) + " tokens"),
        max_tokens_(max_tokens) {}
  size_t max_tokens() const { return max_tokens_; }

 private:
  size_t max_tokens_;
};

// Whether `ids` ids plus at least `bytes` / `max_cover` more (each id stands for at most
// max_cover bytes of the text; 0: no such bound) exceed `max_tokens`; throws TooManyTokens then.
inline void check_token_budget(size_t ids, size_t bytes, size_t max_cover, size_t max_tokens) {
  const size_t at_least = max_cover == 0 ? 0 : (bytes + max_cover - 1) / max_cover;
  if (ids > max_tokens || at_least > max_tokens - ids) throw TooManyTokens(max_tokens);
}

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes text (ds::Error when it is not valid UTF-8, except for llama2.c, which takes bytes).
  virtual std::vector<int32_t> encode(std::string_view text,
                                      const EncodeOptions& options) const = 0;
  std::vector<int32_t> encode(std::string_view text, bool add_special) const {
    return encode(text, EncodeOptions{.add_special = add_special});
  }

  // Decodes ids to text; with skip_special, special tokens (BOS/EOS/UNK and the added tokens
  // marked special) are left out. Throws ds::Error for an id outside [0, vocab_size).
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special) const = 0;
  std::string decode(std::span<const int32_t> ids) const { return decode(ids, true); }

  virtual int32_t vocab_size() const = 0;
  // Whether `id` names a token of this vocabulary (false outside it and for unused ids).
  virtual bool knows(int32_t id) const = 0;
  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  // The raw vocabulary string of one id (e.g. "▁Once", "<0x0A>", "Ġthe"), for tables and debugging.
  virtual std::string token_text(int32_t id) const = 0;
  // "llama2c" or "hf-bpe": which implementation this is.
  virtual std::string kind() const = 0;
  // What decides the ids of a prompt beyond the vocabulary, as a JSON object for a trace's model
  // identity: {"kind", "vocab_size", "bos_id", "eos_id", "add_special": {"prefix": [ids],
  // "suffix": [ids]}, "adds_bos", "adds_eos", "special_in_text"} (bos_id / eos_id null when
  // unknown; special_in_text = whether encode matches special tokens in text by default).
  virtual std::string policy_json() const = 0;
};

// decode() for display (show, diff, stats, generate): an id the tokenizer does not know, as a
// model whose vocabulary is larger than its tokenizer's (padded) can produce, is shown as "<416>"
// between the decoded runs of known ids instead of failing the command.
std::string decode_shown(const Tokenizer& tok, std::span<const int32_t> ids,
                         bool skip_special = true);

// llama2.c tokenizer.bin: int32 max_token_length, then per token float32 score, int32 len, bytes.
// vocab_size is not stored in the file; it comes from the model header. Without it, the file is
// read to its end and holds as many tokens as it holds.
std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::filesystem::path& path,
                                                  int32_t vocab_size);
std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::filesystem::path& path);

// Hugging Face tokenizer.json (model type BPE: SentencePiece-style with byte_fallback, or
// byte-level); tokenizer_config.json beside it is read when present. See docs/tokenizers.md.
std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::filesystem::path& tokenizer_json);

}  // namespace ds
