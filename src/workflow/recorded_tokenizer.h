// The tokenizer a trace recorded in its model_json, loaded when its file is still there: used by
// `show` and `diff` to print text instead of token ids.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "src/tokenizer/tokenizer.h"

namespace ds {

// `model` is a trace's parsed model_json. Returns null (callers print ids) when no tokenizer was
// recorded, its file is gone, or it fails to load.
std::unique_ptr<Tokenizer> recorded_tokenizer(const nlohmann::json& model);

}  // namespace ds
