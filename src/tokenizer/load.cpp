// Picks the tokenizer implementation from a path (tokenizer.json, model directory, tokenizer.bin).
#include "src/tokenizer/load.h"

#include <fmt/format.h>

#include <optional>

#include "common/error.h"
#include "src/tokenizer/tokenizer.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

std::unique_ptr<Tokenizer> load(const fs::path& path, std::optional<int32_t> vocab_size) {
  if (!fs::exists(path)) {
    throw Error(fmt::format("tokenizer '{}' does not exist", path.string()),
                "pass --tokenizer with a tokenizer.json, a model directory or a tokenizer.bin");
  }
  if (fs::is_directory(path)) {
    if (path.extension() == ".json" || path.extension() == ".bin") {  // a file's name, a folder
      throw Error(fmt::format("tokenizer '{}' is a directory", path.string()),
                  "a tokenizer is the file tokenizer.json or tokenizer.bin; replace the folder");
    }
    if (!fs::exists(path / "tokenizer.json")) {
      throw Error(fmt::format("directory '{}' has no tokenizer.json", path.string()),
                  "pass the tokenizer.json or tokenizer.bin itself with --tokenizer");
    }
    return load_hf_tokenizer(path / "tokenizer.json");
  }
  if (path.extension() == ".json") return load_hf_tokenizer(path);
  return vocab_size ? load_llama2c_tokenizer(path, *vocab_size) : load_llama2c_tokenizer(path);
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const fs::path& path) {
  return load(path, std::nullopt);
}

std::unique_ptr<Tokenizer> load_tokenizer(const fs::path& path, int32_t vocab_size) {
  std::unique_ptr<Tokenizer> tok = load(path, vocab_size);
  if (tok->vocab_size() > vocab_size) {
    throw Error(fmt::format("tokenizer '{}' has {} tokens, the model only {}", path.string(),
                            tok->vocab_size(), vocab_size),
                "the tokenizer belongs to another model; pass the right --tokenizer");
  }
  return tok;
}

}  // namespace ds
