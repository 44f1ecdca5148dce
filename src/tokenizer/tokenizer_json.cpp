// Hugging Face tokenizer.json with a BPE model, both kinds real checkpoints use:
// SentencePiece-style with byte_fallback (Llama 2, Mistral, TinyLlama) and byte-level (Qwen2/2.5/3,
// Llama 3). The pipeline of huggingface/tokenizers (the Rust library behind transformers' fast
// tokenizers): added tokens -> normalizer -> pre-tokenizer -> BPE -> post-processor; decoders back.
#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "common/json_error.h"
#include "common/json_integer.h"
#include "src/tokenizer/added.h"
#include "src/tokenizer/bpe.h"
#include "src/tokenizer/decoder.h"
#include "src/tokenizer/json_common.h"
#include "src/tokenizer/normalizer.h"
#include "src/tokenizer/pretokenizer.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/utf8.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

using hf::json;

class HfTokenizer final : public Tokenizer {
 public:
  HfTokenizer(const fs::path& tokenizer_json, const json& root);

  using Tokenizer::decode;
  using Tokenizer::encode;
  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override;

  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  bool knows(int32_t id) const override { return id >= 0 && id < vocab_size() && present_[id]; }
  std::optional<int32_t> bos_id() const override { return bos_id_; }
  std::optional<int32_t> eos_id() const override { return eos_id_; }
  std::string token_text(int32_t id) const override { return tokens_[checked(id)]; }
  std::string kind() const override { return "hf-bpe"; }
  std::string policy_json() const override;

 private:
  size_t checked(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view content) const;
  void read_added_tokens(const hf::Parser& parser, const json& added);
  void apply_post_processor(const hf::Parser& parser, const json& j);
  void apply_tokenizer_config(const fs::path& config_path);

  hf::Normalizer normalizer_;
  hf::PreTokenizer pre_tokenizer_;
  hf::BpeModel model_;
  hf::Decoder decoder_;
  hf::AddedVocabulary added_;
  std::vector<int32_t> prefix_ids_, suffix_ids_;  // put around the text's ids when add_special

  std::vector<std::string> tokens_;  // (vocab_size) the string of each id
  std::vector<bool> present_;        // (vocab_size) false for ids no token has
  std::vector<bool> special_;        // (vocab_size) special added tokens, skipped by decode
  hf::IdMap added_ids_;              // added token content -> id
  std::optional<int32_t> bos_id_, eos_id_;
};

HfTokenizer::HfTokenizer(const fs::path& tokenizer_json, const json& root)
    : normalizer_(root.value("normalizer", json()), hf::Parser(tokenizer_json.string())),
      pre_tokenizer_(root.value("pre_tokenizer", json()), hf::Parser(tokenizer_json.string())),
      model_(root.at("model"), hf::Parser(tokenizer_json.string())),
      decoder_(root.value("decoder", json()), hf::Parser(tokenizer_json.string())) {
  const hf::Parser parser(tokenizer_json.string());
  read_added_tokens(parser, root.value("added_tokens", json::array()));
  apply_post_processor(parser, root.value("post_processor", json()));
  // Without tokenizer_config.json, BOS / EOS are the special tokens the template puts around
  // the text, when it puts exactly one there.
  if (prefix_ids_.size() == 1) bos_id_ = prefix_ids_[0];
  if (suffix_ids_.size() == 1) eos_id_ = suffix_ids_[0];
  const fs::path config = tokenizer_json.parent_path() / "tokenizer_config.json";
  if (fs::exists(config)) apply_tokenizer_config(config);
}

// The id space: the model's vocabulary plus the added tokens (which may lie beyond it, or reuse
// an id of the vocabulary).
void HfTokenizer::read_added_tokens(const hf::Parser& parser, const json& added) {
  if (!added.is_array()) parser.invalid("\"added_tokens\" is not a list");
  std::vector<hf::AddedToken> tokens;
  for (const json& t : added) {
    const auto id = json_integer<int32_t>(t.at("id"), 0, hf::kMaxTokenId);
    if (!id) {
      parser.invalid(fmt::format("added token id {}, not a whole number in 0..{}",
                                 t.at("id").dump(), hf::kMaxTokenId));
    }
    hf::AddedToken token;
    token.content = t.at("content").get<std::string>();
    token.id = *id;
    token.special = t.value("special", false);
    token.single_word = t.value("single_word", false);
    token.lstrip = t.value("lstrip", false);
    token.rstrip = t.value("rstrip", false);
    token.normalized = t.value("normalized", !token.special);
    if (!utf8_is_valid(token.content)) {
      parser.invalid(fmt::format("added token {} is not valid UTF-8", *id));
    }
    tokens.push_back(std::move(token));
  }

  int32_t size = 0;
  for (const auto& [token, id] : model_.vocab()) size = std::max(size, id + 1);
  for (const hf::AddedToken& t : tokens) size = std::max(size, t.id + 1);
  tokens_.resize(size);
  present_.resize(size);
  special_.resize(size);
  for (const auto& [token, id] : model_.vocab()) {
    tokens_[id] = token;
    present_[id] = true;
  }
  for (const hf::AddedToken& t : tokens) {  // added tokens come last and win, as in the reference
    tokens_[t.id] = t.content;
    present_[t.id] = true;
    special_[t.id] = t.special;
    added_ids_.insert_or_assign(t.content, t.id);
  }
  added_ = hf::AddedVocabulary(std::move(tokens), normalizer_);
}

// TemplateProcessing: the "single" template lists SpecialToken items and one Sequence "A" (the
// text); the special tokens before it become the prefix, those after it the suffix. ByteLevel
// only trims offsets, which ids do not have. Sequence applies its processors in order.
void HfTokenizer::apply_post_processor(const hf::Parser& parser, const json& j) {
  if (j.is_null()) return;
  const std::string type = parser.type(j, "post_processor");
  if (type == "Sequence") {
    for (const json& step : j.at("processors")) apply_post_processor(parser, step);
    return;
  }
  if (type == "ByteLevel") return;
  if (type != "TemplateProcessing") {
    parser.unsupported("post_processor", type,
                       "supported post-processors: TemplateProcessing, ByteLevel, Sequence");
  }
  prefix_ids_.clear();
  suffix_ids_.clear();
  bool seen_sequence = false;
  for (const json& item : j.at("single")) {
    if (item.contains("Sequence")) {
      if (seen_sequence) parser.invalid("the single template has two sequences");
      seen_sequence = true;
    } else if (item.contains("SpecialToken")) {
      const auto name = item.at("SpecialToken").at("id").get<std::string>();
      const json& special = j.at("special_tokens");
      if (!special.contains(name)) {
        parser.invalid(fmt::format("template token '{}' is not in special_tokens", name));
      }
      auto& target = seen_sequence ? suffix_ids_ : prefix_ids_;
      for (const json& id : special.at(name).at("ids")) {
        const auto value = json_integer<int32_t>(id, 0, INT32_MAX);
        if (!value) parser.invalid(fmt::format("special token '{}' has id {}", name, id.dump()));
        target.push_back(*value);
      }
    } else {
      parser.invalid("a template item is neither SpecialToken nor Sequence");
    }
  }
  for (int32_t id : prefix_ids_) checked(id);
  for (int32_t id : suffix_ids_) checked(id);
}

// tokenizer_config.json (read by transformers): bos_token / eos_token name the BOS and EOS
// tokens (a string, or an object with "content"); add_bos_token / add_eos_token, when given,
// decide whether they are added, overriding the template (as LlamaTokenizerFast does).
void HfTokenizer::apply_tokenizer_config(const fs::path& config_path) {
  const json config = hf::read_json(config_path);
  const std::string file = config_path.string();
  try {
    const auto special_token = [&](const char* key) -> std::optional<int32_t> {
      if (!config.contains(key) || config.at(key).is_null()) return std::nullopt;
      const json& value = config.at(key);
      const auto name =
          value.is_object() ? value.at("content").get<std::string>() : value.get<std::string>();
      auto id = token_id(name);
      if (!id) {
        throw Error(fmt::format("{}: {} '{}' is not in the vocabulary", file, key, name),
                    "tokenizer_config.json does not match tokenizer.json");
      }
      return id;
    };
    if (auto id = special_token("bos_token")) bos_id_ = id;
    if (auto id = special_token("eos_token")) eos_id_ = id;

    const auto override_ends = [&](const char* key, const std::optional<int32_t>& id,
                                   std::vector<int32_t>& ids) {
      if (!config.contains(key) || config.at(key).is_null()) return;
      ids.clear();
      if (!config.at(key).get<bool>()) return;
      if (!id) {
        throw Error(fmt::format("{}: {} is true but no such token is named", file, key),
                    "give bos_token / eos_token in tokenizer_config.json");
      }
      ids.push_back(*id);
    };
    override_ends("add_bos_token", bos_id_, prefix_ids_);
    override_ends("add_eos_token", eos_id_, suffix_ids_);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: unexpected content ({})", file, json_error_cause(e)),
                "the file does not follow the transformers tokenizer_config.json format");
  }
}

size_t HfTokenizer::checked(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !present_[id]) {
    throw Error(fmt::format("unknown token id {} (vocabulary has {} tokens)", id, vocab_size()),
                fmt::format("token ids run from 0 to {}; were the ids made with another tokenizer?",
                            vocab_size() - 1));
  }
  return static_cast<size_t>(id);
}

std::optional<int32_t> HfTokenizer::token_id(std::string_view content) const {
  if (auto it = added_ids_.find(content); it != added_ids_.end()) return it->second;
  return model_.lookup(content);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text,
                                         const EncodeOptions& options) const {
  if (auto bad = utf8_first_invalid(text)) {
    throw Error(fmt::format("cannot tokenize text that is not valid UTF-8 (byte 0x{:02X} at offset "
                            "{} of {})",
                            static_cast<unsigned char>(text[*bad]), *bad, text.size()),
                "give the prompt as UTF-8 text, or as token ids");
  }
  std::vector<int32_t> ids;
  if (options.add_special) ids = prefix_ids_;
  const size_t budget = options.max_tokens;
  const size_t cover = budget == SIZE_MAX ? 0 : model_.max_cover();
  std::vector<hf::Piece> pieces;
  for (hf::Segment& segment : added_.split(text, normalizer_, options.special_in_text)) {
    if (segment.id) {
      ids.push_back(*segment.id);
      continue;
    }
    pieces.clear();
    pieces.push_back({std::move(segment.text), segment.at_origin});
    pre_tokenizer_.apply(pieces);
    for (const hf::Piece& piece : pieces) {
      check_token_budget(ids.size(), piece.text.size(), cover, budget);  // before the merges
      model_.tokenize(piece.text, ids);
    }
  }
  if (options.add_special) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  check_token_budget(ids.size(), 0, 0, budget);
  return ids;
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  // Special added tokens are skipped before the decoders see the tokens; the others (and, when
  // kept, the special ones) go through the decoders like any token.
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (!(skip_special && special_[checked(id)])) tokens.push_back(tokens_[id]);
  }
  return decoder_.decode(std::move(tokens));
}

std::string HfTokenizer::policy_json() const {
  nlohmann::ordered_json j;
  const auto optional_id = [](const std::optional<int32_t>& id) {
    return id ? nlohmann::ordered_json(*id) : nlohmann::ordered_json();
  };
  j["kind"] = kind();
  j["vocab_size"] = vocab_size();
  j["bos_id"] = optional_id(bos_id_);
  j["eos_id"] = optional_id(eos_id_);
  j["add_special"] = {{"prefix", prefix_ids_}, {"suffix", suffix_ids_}};
  j["adds_bos"] =
      bos_id_ && std::find(prefix_ids_.begin(), prefix_ids_.end(), *bos_id_) != prefix_ids_.end();
  j["adds_eos"] =
      eos_id_ && std::find(suffix_ids_.begin(), suffix_ids_.end(), *eos_id_) != suffix_ids_.end();
  j["special_in_text"] = EncodeOptions{}.special_in_text;
  return j.dump();
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer(const fs::path& tokenizer_json) {
  const json root = hf::read_json(tokenizer_json);
  try {
    if (!root.is_object() || !root.contains("model")) {
      hf::Parser(tokenizer_json.string()).invalid("no \"model\" object");
    }
    return std::make_unique<HfTokenizer>(tokenizer_json, root);
  } catch (const json::exception& e) {
    throw Error(
        fmt::format("{}: unexpected content ({})", tokenizer_json.string(), json_error_cause(e)),
        "the file does not follow the Hugging Face tokenizer.json format");
  }
}

}  // namespace ds
