// Reading prompt files (plain lines or JSONL).
#include "src/experiment/prompts.h"

#include <fmt/format.h>

#include <climits>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/json_error.h"
#include "common/json_integer.h"
#include "src/model/text_file.h"

namespace ds {

namespace {

constexpr const char* kJsonlHint = "each JSONL line is {\"text\": \"...\"} or {\"ids\": [1, 2, 3]}";

// One line's text encoded; a text that certainly takes more than `budget` ids stops the
// tokenizer early (TooManyTokens).
std::vector<int32_t> encode_line(const Tokenizer* tok, const std::string& text,
                                 const std::string& where, bool special_in_text, size_t budget,
                                 const std::optional<Error>& why_no_tokenizer) {
  if (tok == nullptr && why_no_tokenizer) {  // the real cause: a tokenizer that does not load
    throw Error(fmt::format("{}: a text prompt needs the tokenizer, which cannot be loaded: {}",
                            where, why_no_tokenizer->what()),
                why_no_tokenizer->hint());
  }
  if (tok == nullptr) {
    throw Error(where + ": a text prompt needs a tokenizer",
                "pass --tokenizer, or give prompts as {\"ids\": [...]}");
  }
  return tok->encode(
      text,
      EncodeOptions{.add_special = true, .special_in_text = special_in_text, .max_tokens = budget});
}

// The JSON of one JSONL line; an "ids" list of more than `budget` ids is refused while it is
// parsed (TooManyTokens), before a list of millions is built.
nlohmann::json parse_jsonl_line(const std::string& line, const std::string& where, size_t budget) {
  std::string key;
  size_t ids = 0;
  const auto bound = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1) key = parsed.get<std::string>();
    if (event == nlohmann::json::parse_event_t::value && depth == 2 && key == "ids" &&
        ++ids > budget) {
      throw TooManyTokens(budget);
    }
    return true;
  };
  try {
    return nlohmann::json::parse(line, bound);
  } catch (const nlohmann::json::exception& e) {
    const JsonFailure f = json_failure(line, e);  // `where` is FILE:LINE already
    throw Error(f.line == 0
                    ? fmt::format("{}: {}", where, f.cause)
                    : fmt::format("{}: not valid JSON at column {}: {}", where, f.column, f.cause),
                kJsonlHint);
  }
}

// A JSONL line's ids under `key`: whole numbers >= 0.
std::vector<int32_t> jsonl_ids(const nlohmann::json& j, const char* key, const std::string& where) {
  std::vector<int32_t> ids;
  for (const auto& v : j[key]) {
    const auto id = json_integer<int32_t>(v, 0, INT32_MAX);  // 2^32 + 1 is refused
    if (!id) {
      throw Error(fmt::format("{}: \"{}\" holds {}, not a token id", where, key, v.dump()),
                  "token ids are whole numbers >= 0, e.g. {\"ids\": [1, 403, 407]}");
    }
    ids.push_back(*id);
  }
  return ids;
}

// A JSONL line's prompt: {"text": "..."} encoded, or {"ids": [...]} as given; never both.
// {"ids": [...], "forced": [...]} also sets the forced continuation (teacher forcing).
Prompt jsonl_prompt(const nlohmann::json& j, const std::string& where,
                    const std::function<std::vector<int32_t>(const std::string&)>& encode) {
  if (j.contains("ids") && j.contains("text")) {
    throw Error(where + ": give \"text\" or \"ids\", not both",
                "keep the one the run should consume: {\"text\": \"...\"} is encoded by "
                "the tokenizer, {\"ids\": [1, 2, 3]} is used as given");
  }
  Prompt p;
  if (j.contains("forced")) {  // teacher forcing, as run --force-tokens (zoom writes these)
    if (!j["forced"].is_array() || !j.contains("ids")) {
      throw Error(where + ": \"forced\" goes with \"ids\" and is a list of ids",
                  "e.g. {\"ids\": [1, 403], \"forced\": [407, 9]}");
    }
    p.forced = jsonl_ids(j, "forced", where);
  }
  if (j.contains("ids") && j["ids"].is_array()) {
    p.ids = jsonl_ids(j, "ids", where);
  } else if (j.contains("text") && j["text"].is_string()) {
    p.text = j["text"].get<std::string>();
    p.ids = encode(*p.text);
  } else {
    throw Error(where + ": needs a \"text\" string or an \"ids\" list", kJsonlHint);
  }
  return p;
}

}  // namespace

std::vector<Prompt> read_prompts_file(const std::filesystem::path& path, const Tokenizer* tok,
                                      bool special_in_text, int context,
                                      const std::optional<Error>& why_no_tokenizer) {
  const char* hint = "--prompts takes a text file with one prompt per line, or JSONL";
  std::string text = read_text_file(path, kMaxPromptsFileBytes, "prompts file", hint);
  // A UTF-8 byte order mark (Windows Notepad saves one) marks the encoding; it is no prompt text.
  if (text.starts_with(kUtf8Bom)) text.erase(0, kUtf8Bom.size());
  const size_t budget = context == INT_MAX ? SIZE_MAX : static_cast<size_t>(context) + 1;
  std::istringstream in(std::move(text));
  std::vector<Prompt> out;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", path.string(), line_no);
    const auto encode = [&](const std::string& t) {
      return encode_line(tok, t, where, special_in_text, budget, why_no_tokenizer);
    };
    Prompt p;
    try {
      p = line.front() == '{' ? jsonl_prompt(parse_jsonl_line(line, where, budget), where, encode)
                              : Prompt{line, encode(line)};
    } catch (const TooManyTokens& e) {
      throw Error(fmt::format("{}: the prompt has more than {} tokens, more than the context of "
                              "{} positions",
                              where, e.max_tokens(), context),
                  "shorten the prompt");
    }
    if (p.ids.empty()) {
      throw Error(where + ": the prompt has no tokens",
                  "give the line some text, or {\"ids\": [...]} with at least one id");
    }
    if (out.size() == kMaxPrompts) {
      throw Error(fmt::format("prompts file '{}' holds more than {} prompts (line {})",
                              path.string(), kMaxPrompts, line_no),
                  "split the prompts into several files and runs");
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) {
    throw Error(fmt::format("prompts file '{}' holds no prompt", path.string()), hint);
  }
  return out;
}

void apply_add_bos(std::vector<Prompt>& prompts, AddBos policy, std::optional<int32_t> bos) {
  if (policy == AddBos::automatic) return;
  if (!bos) {
    if (policy == AddBos::off) return;
    throw Error("add_bos on: the model and tokenizer declare no BOS token",
                "use --add-bos auto or off");
  }
  for (auto& p : prompts) {
    const bool has = !p.ids.empty() && p.ids.front() == *bos;
    if (policy == AddBos::on && !has) p.ids.insert(p.ids.begin(), *bos);
    if (policy == AddBos::off && has) p.ids.erase(p.ids.begin());
    if (p.ids.empty()) {
      throw Error("add_bos off leaves an empty prompt (it held only BOS)",
                  "give a prompt with text, or use --add-bos auto");
    }
  }
}

}  // namespace ds
