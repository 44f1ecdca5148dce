// Tokenizer interface: text <-> token ids, for llama2.c tokenizer.bin and Hugging Face tokenizer.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ds {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes text. With add_special, the special tokens the tokenizer's own config asks for are
  // added (BOS for llama2.c and for tokenizer.json files whose post-processor adds it).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special) const = 0;

  // Decodes ids to text, skipping special tokens (BOS/EOS/UNK as declared special).
  // Throws ds::Error for an id outside [0, vocab_size).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  // The raw vocabulary string of one id (e.g. "▁Once", "<0x0A>"), for tables and debugging.
  virtual std::string token_text(int32_t id) const = 0;
  // "llama2c" or "hf-bpe": which implementation this is.
  virtual std::string kind() const = 0;
};

// llama2.c tokenizer.bin: int32 max_token_length, then per token float32 score, int32 len, bytes.
// vocab_size is not stored in the file; it comes from the model header.
std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::filesystem::path& path,
                                                  int32_t vocab_size);

// Hugging Face tokenizer.json (model type BPE); tokenizer_config.json beside it is read when present.
std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::filesystem::path& tokenizer_json);

}  // namespace ds
