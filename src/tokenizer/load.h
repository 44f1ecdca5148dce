// Loading the right tokenizer implementation for a path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "src/tokenizer/tokenizer.h"

namespace ds {

// `path` is a tokenizer.json, a directory holding one, or a llama2.c tokenizer.bin (whose size is
// then as many tokens as the file holds).
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path);

// The same, for a model with `vocab_size` embedding rows: a llama2.c tokenizer.bin is read with
// that many tokens; a tokenizer.json may have fewer tokens than the model (checkpoints such as
// Qwen pad the embedding to a round size) but not more; else ds::Error.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path, int32_t vocab_size);

}  // namespace ds
