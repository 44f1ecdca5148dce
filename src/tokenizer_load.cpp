// Picks the tokenizer implementation from a path (tokenizer.json, model directory, tokenizer.bin).
#include <fmt/format.h>

#include "common/error.h"
#include "src/tokenizer.h"
#include "src/tokenizer_load.h"

namespace fs = std::filesystem;

namespace ds {

std::unique_ptr<Tokenizer> load_tokenizer(const fs::path& path, int32_t vocab_size) {
  if (!fs::exists(path)) {
    throw Error(fmt::format("tokenizer '{}' does not exist", path.string()),
                "pass --tokenizer with a tokenizer.json, a model directory or a tokenizer.bin");
  }
  std::unique_ptr<Tokenizer> tok;
  if (fs::is_directory(path)) {
    tok = load_hf_tokenizer(path / "tokenizer.json");
  } else if (path.extension() == ".json") {
    tok = load_hf_tokenizer(path);
  } else {
    tok = load_llama2c_tokenizer(path, vocab_size);
  }
  if (tok->vocab_size() != vocab_size) {
    throw Error(fmt::format("tokenizer '{}' has {} tokens, the model {}", path.string(),
                            tok->vocab_size(), vocab_size),
                "the tokenizer belongs to another model; pass the right --tokenizer");
  }
  return tok;
}

}  // namespace ds
