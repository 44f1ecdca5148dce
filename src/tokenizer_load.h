// Loading the right tokenizer implementation for a path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "src/tokenizer.h"

namespace ds {

// `path` is a tokenizer.json, a directory holding one, or a llama2.c tokenizer.bin. The
// tokenizer's vocabulary must have `vocab_size` tokens (the model's); else ds::Error.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path, int32_t vocab_size);

}  // namespace ds
