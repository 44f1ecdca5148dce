// `driftscope tokenize`: text -> token ids (or, with --decode, ids -> text) with any tokenizer the
// runtime reads, so that a prompt's ids can be checked against another implementation.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/json_error.h"
#include "common/json_integer.h"
#include "common/printable.h"
#include "src/cli/commands.h"
#include "src/console/output.h"
#include "src/model/text_file.h"
#include "src/tokenizer/load.h"
#include "src/workflow/loaded_model.h"

namespace ds {
namespace {

using nlohmann::json;

struct TokenizeArgs {
  std::string tokenizer;
  std::optional<std::string> text;
  std::optional<std::string> texts;  // path of a JSON file
  bool special = false;
  bool decode = false;
  bool no_special_in_text = false;
};

// JSON text of a string; bytes that are not UTF-8 (a llama2.c decode may give them) become U+FFFD,
// DEL and C1 controls are escaped as JSON's other controls are (\u009b), safe on a terminal.
std::string json_string(const std::string& s) {
  return printable_json(json(s).dump(-1, ' ', false, json::error_handler_t::replace));
}

json read_json_file(const std::string& path) {
  // bounded: /dev/zero or a huge file is refused with the limit instead of filling memory
  const std::string bytes =
      read_text_file(path, kMaxTextsFileBytes, "--texts file",
                     "give a JSON file: a list of strings (or, with --decode, of id lists)");
  try {
    return json::parse(bytes);
  } catch (const json::exception& e) {
    throw Error(json_parse_failure(fmt::format("--texts file '{}'", path), bytes, e),
                "the file must hold a JSON list, e.g. [\"Hello\", \"world\"]");
  }
}

// One id list of a --decode --texts file: [1, 2, 3] or {"ids": [1, 2, 3], ...}.
std::vector<int32_t> ids_of(const json& item, size_t index, const std::string& path) {
  const json& list = item.is_object() && item.contains("ids") ? item.at("ids") : item;
  const auto fail = [&] {
    throw Error(fmt::format("--texts file '{}': item {} is not a list of token ids", path, index),
                "with --decode the file holds id lists, [[1, 2], [3]], or the output of "
                "`driftscope tokenize --texts` ([{\"ids\": [...]}, ...])");
  };
  if (!list.is_array()) fail();
  std::vector<int32_t> ids;
  for (const json& id : list) {
    const auto value = json_integer<int32_t>(id, 0, INT32_MAX);
    if (!value) fail();
    ids.push_back(*value);
  }
  return ids;
}

// Prints JSON list items one per line.
void print_list(const std::vector<std::string>& items) {
  write_stdout("[\n");
  for (size_t i = 0; i < items.size(); ++i) {
    fmt::print("{}{}\n", items[i], i + 1 < items.size() ? "," : "");
  }
  write_stdout("]\n");
}

int run_tokenize(const TokenizeArgs& a) {
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(a.tokenizer);
  const EncodeOptions options{.add_special = a.special, .special_in_text = !a.no_special_in_text};

  if (a.text) {
    if (a.decode) {
      const std::vector<int32_t> ids = parse_id_list(*a.text);
      fmt::print("{}\n", tok->decode(ids, /*skip_special=*/!a.special));
    } else {
      fmt::print("{}\n", fmt::join(tok->encode(*a.text, options), " "));
    }
    return 0;
  }

  const json input = read_json_file(*a.texts);
  if (!input.is_array()) {
    throw Error(fmt::format("--texts file '{}' does not hold a JSON list", *a.texts),
                a.decode ? "with --decode: a list of id lists, e.g. [[1, 2], [3]]"
                         : "a list of strings, e.g. [\"Hello\", \"world\"]");
  }
  std::vector<std::string> items;
  for (size_t i = 0; i < input.size(); ++i) {
    if (a.decode) {
      const std::vector<int32_t> ids = ids_of(input[i], i, *a.texts);
      items.push_back(fmt::format("{{\"ids\": {}, \"text\": {}}}", json(ids).dump(),
                                  json_string(tok->decode(ids, !a.special))));
    } else {
      if (!input[i].is_string()) {
        throw Error(fmt::format("--texts file '{}': item {} is not a string", *a.texts, i),
                    "the file must hold a JSON list of strings, e.g. [\"Hello\", \"world\"]");
      }
      const auto& text = input[i].get_ref<const std::string&>();
      items.push_back(fmt::format("{{\"text\": {}, \"ids\": {}}}", json_string(text),
                                  json(tok->encode(text, options)).dump()));
    }
  }
  print_list(items);
  return 0;
}

}  // namespace

CommandRun register_tokenize(CLI::App* cmd) {
  auto args = std::make_shared<TokenizeArgs>();
  cmd->description(
      "Encode text to token ids (or, with --decode, token ids to text) with a tokenizer.json, a "
      "model directory or a llama2.c tokenizer.bin.");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "tokenizer.json, model directory holding one, or llama2.c tokenizer.bin")
      ->required();
  auto* text = cmd->add_option("--text", args->text,
                               "one text; prints its ids on one line (with --decode: ids, "
                               "separated by spaces or commas; prints the text)");
  auto* texts = cmd->add_option("--texts", args->texts,
                                "JSON file with a list of strings; prints a JSON list of "
                                "{\"text\", \"ids\"} (with --decode: a list of id lists)");
  text->excludes(texts);
  cmd->add_flag("--special", args->special,
                "add BOS/EOS as the tokenizer's config says (off by default); with --decode, keep "
                "special tokens in the text");
  auto* decode = cmd->add_flag("--decode", args->decode, "decode token ids to text");
  cmd->add_flag("--no-special-in-text", args->no_special_in_text,
                "tokenize special tokens written in the text (e.g. <|im_start|>) as plain text")
      ->excludes(decode);
  cmd->callback([cmd, text, texts] {
    if (text->count() == 0 && texts->count() == 0) {
      throw CLI::RequiredError(cmd->get_name() + ": --text or --texts");
    }
  });
  return [args] { return run_tokenize(*args); };
}

}  // namespace ds
