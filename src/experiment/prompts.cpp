// Reading prompt files (plain lines or JSONL).
#include "src/experiment/prompts.h"

#include <fmt/format.h>

#include <climits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/json_integer.h"
#include "src/model/text_file.h"

namespace ds {

std::vector<Prompt> read_prompts_file(const std::filesystem::path& path, const Tokenizer* tok,
                                      bool special_in_text) {
  const char* hint = "--prompts takes a text file with one prompt per line, or JSONL";
  std::string text = read_text_file(path, kMaxPromptsFileBytes, "prompts file", hint);
  // A UTF-8 byte order mark (Windows Notepad saves one) marks the encoding; it is no prompt text.
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
  std::istringstream in(std::move(text));
  std::vector<Prompt> out;
  std::string line;
  int line_no = 0;
  auto encode = [&](const std::string& text) {
    if (tok == nullptr) {
      throw Error(fmt::format("{}:{}: a text prompt needs a tokenizer", path.string(), line_no),
                  "pass --tokenizer, or give prompts as {\"ids\": [...]}");
    }
    return tok->encode(text,
                       EncodeOptions{.add_special = true, .special_in_text = special_in_text});
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    Prompt p;
    if (line.front() == '{') {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception& e) {
        throw Error(fmt::format("{}:{}: not valid JSON ({})", path.string(), line_no, e.what()),
                    "each JSONL line is {\"text\": \"...\"} or {\"ids\": [1, 2, 3]}");
      }
      if (j.contains("ids") && j.contains("text")) {
        throw Error(
            fmt::format("{}:{}: give \"text\" or \"ids\", not both", path.string(), line_no),
            "keep the one the run should consume: {\"text\": \"...\"} is encoded by "
            "the tokenizer, {\"ids\": [1, 2, 3]} is used as given");
      }
      if (j.contains("ids") && j["ids"].is_array()) {
        for (const auto& v : j["ids"]) {
          const auto id = json_integer<int32_t>(v, 0, INT32_MAX);  // 2^32 + 1 is refused
          if (!id) {
            throw Error(fmt::format("{}:{}: \"ids\" holds {}, not a token id", path.string(),
                                    line_no, v.dump()),
                        "token ids are whole numbers >= 0, e.g. {\"ids\": [1, 403, 407]}");
          }
          p.ids.push_back(*id);
        }
      } else if (j.contains("text") && j["text"].is_string()) {
        p.text = j["text"].get<std::string>();
        p.ids = encode(*p.text);
      } else {
        throw Error(fmt::format("{}:{}: needs a \"text\" string or an \"ids\" list", path.string(),
                                line_no),
                    "each JSONL line is {\"text\": \"...\"} or {\"ids\": [1, 2, 3]}");
      }
    } else {
      p.text = line;
      p.ids = encode(line);
    }
    if (p.ids.empty()) {
      throw Error(fmt::format("{}:{}: the prompt has no tokens", path.string(), line_no),
                  "give the line some text, or {\"ids\": [...]} with at least one id");
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) {
    throw Error(fmt::format("prompts file '{}' holds no prompt", path.string()), hint);
  }
  return out;
}

void apply_add_bos(std::vector<Prompt>& prompts, const std::string& policy,
                   std::optional<int32_t> bos) {
  if (policy == "auto") return;
  if (!bos) {
    if (policy == "off") return;
    throw Error("add_bos on: the model and tokenizer declare no BOS token",
                "use --add-bos auto or off");
  }
  for (auto& p : prompts) {
    const bool has = !p.ids.empty() && p.ids.front() == *bos;
    if (policy == "on" && !has) p.ids.insert(p.ids.begin(), *bos);
    if (policy == "off" && has) p.ids.erase(p.ids.begin());
    if (p.ids.empty()) {
      throw Error("add_bos off leaves an empty prompt (it held only BOS)",
                  "give a prompt with text, or use --add-bos auto");
    }
  }
}

}  // namespace ds
