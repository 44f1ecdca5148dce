// Loading the tokenizer recorded in a trace's model_json.
#include "src/workflow/recorded_tokenizer.h"

#include <filesystem>

#include "common/json_integer.h"
#include "src/tokenizer/load.h"

namespace ds {

std::unique_ptr<Tokenizer> recorded_tokenizer(const nlohmann::json& model) {
  try {
    const auto& tok = model.at("tokenizer");
    if (tok.is_null()) return nullptr;
    const std::filesystem::path p = tok.at("path").get<std::string>();
    if (!std::filesystem::exists(p)) return nullptr;
    const auto vocab = json_integer<int>(model.at("config").at("vocab_size"), 1, INT32_MAX);
    if (!vocab) return nullptr;
    return load_tokenizer(p, *vocab);
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace ds
