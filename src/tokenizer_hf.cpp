// Hugging Face tokenizer.json with a BPE model (SentencePiece-style, byte_fallback: Llama 2,
// Mistral, TinyLlama): normalizers, Metaspace, BPE merges, post-processor and decoders, with the
// semantics of huggingface/tokenizers (the Rust library behind transformers' fast tokenizers).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>
#include <variant>

#include "common/error.h"
#include "src/mapped_file.h"
#include "src/tokenizer.h"
#include "src/utf8.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace ds {
namespace {

// Lets the maps be searched with a string_view, without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using IdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content) {
  if (pattern.empty()) return std::string(text);
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(pattern, pos)) != std::string_view::npos;) {
    out.append(text, pos, hit - pos);
    out += content;
    pos = hit + pattern.size();
  }
  out.append(text, pos);
  return out;
}

// ---- Components: what each supported type does ----------------------------------------------

// Normalizers rewrite the whole text before anything else.
struct PrependNormalizer {
  std::string prefix;  // added in front of a non-empty text
};
struct ReplaceNormalizer {
  std::string pattern, content;  // every occurrence, left to right, not overlapping
};
using Normalizer = std::variant<PrependNormalizer, ReplaceNormalizer>;

// Metaspace (pre-tokenizer and decoder): spaces become `replacement` ("▁"), one is put in front.
enum class PrependScheme { kAlways, kFirst, kNever };
struct Metaspace {
  std::string replacement = "\u2581";
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;  // pre-tokenizer only: split in front of every replacement character
};

// Decoders turn the list of token strings into text, one step after the other.
struct ReplaceDecoder {
  std::string pattern, content;  // in each token
};
struct ByteFallbackDecoder {};  // "<0xXX>" tokens -> bytes
struct FuseDecoder {};          // all tokens -> one
struct StripDecoder {
  std::string content;  // one character
  size_t start = 0;     // at most this many leading copies removed from each token
  size_t stop = 0;      // at most this many trailing copies
};
using Decoder =
    std::variant<ReplaceDecoder, ByteFallbackDecoder, FuseDecoder, StripDecoder, Metaspace>;

// The BPE model. Merges map a pair of ids to (rank, merged id); lower ranks merge first.
struct Merge {
  int32_t rank;
  int32_t merged_id;
};
uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

struct BpeModel {
  IdMap vocab;
  std::unordered_map<uint64_t, Merge> merges;
  std::optional<std::string> unk_token;
  std::optional<int32_t> unk_id;  // unset when unk_token is not in the vocabulary
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;

  void tokenize(std::string_view word, std::vector<int32_t>& out) const;
  void merge_all(std::vector<int32_t>& ids) const;
  std::optional<int32_t> lookup(std::string_view piece) const {
    auto it = vocab.find(piece);
    if (it == vocab.end()) return std::nullopt;
    return it->second;
  }
  const Merge* find_merge(int32_t left, int32_t right) const {
    auto it = merges.find(pair_key(left, right));
    return it == merges.end() ? nullptr : &it->second;
  }
};

// BPE::tokenize of huggingface/tokenizers for one word (here usually the whole text: without a
// splitting pre-tokenizer there is one word). Each character becomes its vocabulary id; failing
// that, with byte_fallback, the ids of its "<0xXX>" byte pieces; failing that, unk_token (runs of
// unknown characters fused into one when fuse_unk; dropped silently when there is no unk_token).
// Then the merges are applied.
void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges) {
    if (auto id = lookup(word)) {  // a word that is a token is taken whole
      out.push_back(*id);
      return;
    }
  }

  std::vector<int32_t> ids;
  bool pending_unk = false;  // an unknown character (or, with fuse_unk, a run of them) to add
  const auto flush_unk = [&] {
    if (!pending_unk) return;
    if (!unk_id) {
      throw Error(fmt::format("unk_token '{}' is not in the vocabulary", *unk_token),
                  "the tokenizer.json is inconsistent; its text cannot be tokenized");
    }
    ids.push_back(*unk_id);
    pending_unk = false;
  };
  for (size_t pos = 0; pos < word.size();) {
    const size_t length = utf8_decode_char(word, pos)->length;  // the text was validated
    const std::string_view ch = word.substr(pos, length);
    pos += length;

    if (auto id = lookup(ch)) {
      flush_unk();
      ids.push_back(*id);
      continue;
    }
    if (byte_fallback) {
      std::vector<int32_t> bytes;
      for (char c : ch) {
        if (auto id = lookup(byte_piece(static_cast<unsigned char>(c)))) bytes.push_back(*id);
      }
      if (bytes.size() == ch.size()) {  // only when every byte has its piece
        // (The reference appends these before a pending unk; that needs a vocabulary with only
        // some byte pieces, and keeping the text order here is the sensible reading.)
        flush_unk();
        ids.insert(ids.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (!unk_token) continue;
    if (!fuse_unk) flush_unk();
    pending_unk = true;
  }
  flush_unk();

  merge_all(ids);
  out.insert(out.end(), ids.begin(), ids.end());
}

// Word::merge_all of huggingface/tokenizers: repeatedly merge the pair with the lowest rank, the
// leftmost one on ties, until no pair has a merge. The symbols form a linked list and the
// candidate pairs wait in a priority queue, so a long text costs O(n log n). A queue entry is
// stale when its left symbol is gone or has no right neighbour any more, or when the pair now
// there does not merge into the entry's merged id (the same test as the reference).
void BpeModel::merge_all(std::vector<int32_t>& ids) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // indices, -1 at the ends
    bool alive = true;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;  // index of the left symbol
    int32_t merged_id;
  };
  const auto lower_priority = [](const Candidate& a, const Candidate& b) {
    if (a.rank != b.rank) return a.rank > b.rank;
    return a.pos > b.pos;
  };

  const auto n = static_cast<int32_t>(ids.size());
  std::vector<Symbol> symbols;
  symbols.reserve(ids.size());
  for (int32_t i = 0; i < n; ++i) symbols.push_back({ids[i], i - 1, i + 1 < n ? i + 1 : -1});

  std::priority_queue<Candidate, std::vector<Candidate>, decltype(lower_priority)> queue(
      lower_priority);
  const auto consider = [&](int32_t left) {
    if (left < 0 || symbols[left].next < 0) return;
    if (const Merge* m = find_merge(symbols[left].id, symbols[symbols[left].next].id)) {
      queue.push({m->rank, left, m->merged_id});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    const Merge* m = find_merge(left.id, right.id);
    if (m == nullptr || m->merged_id != top.merged_id) continue;

    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    consider(left.prev);
    consider(top.pos);
  }

  ids.clear();
  for (const Symbol& s : symbols) {
    if (s.alive) ids.push_back(s.id);
  }
}

// ---- Reading tokenizer.json -------------------------------------------------------------------

json read_json(const fs::path& path) {
  const MappedFile file(path);
  const auto* begin = reinterpret_cast<const char*>(file.bytes().data());
  try {
    return json::parse(begin, begin + file.size());
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("{}: not valid JSON ({})", path.string(), e.what()),
                "the file may be truncated or damaged; fetch it again");
  }
}

// Knows the file name, for error messages.
class Parser {
 public:
  explicit Parser(const fs::path& path) : file_(path.string()) {}

  [[noreturn]] void unsupported(std::string_view component, std::string_view type,
                                std::string_view hint) const {
    throw Error(fmt::format("{}: unsupported {} type '{}'", file_, component, type),
                std::string(hint));
  }
  [[noreturn]] void invalid(std::string_view what) const {
    throw Error(fmt::format("{}: {}", file_, what),
                "the tokenizer.json does not follow the Hugging Face format");
  }

  void normalizer(const json& j, std::vector<Normalizer>& out) const;
  std::optional<Metaspace> pre_tokenizer(const json& j) const;
  BpeModel model(const json& j) const;
  void decoder(const json& j, std::vector<Decoder>& out) const;
  Metaspace metaspace(const json& j) const;
  std::string string_pattern(const json& pattern, std::string_view where) const;

 private:
  std::string file_;
};

// A Replace pattern: {"String": "x"} is supported, {"Regex": "..."} is not yet.
std::string Parser::string_pattern(const json& pattern, std::string_view where) const {
  if (pattern.contains("String")) return pattern.at("String").get<std::string>();
  if (pattern.contains("Regex")) {
    throw Error(fmt::format("{}: unsupported Regex pattern in the {}", file_, where),
                "only plain-string Replace patterns are supported");
  }
  invalid(fmt::format("the {} has no String or Regex pattern", where));
}

void Parser::normalizer(const json& j, std::vector<Normalizer>& out) const {
  if (j.is_null()) return;
  const auto type = j.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const json& step : j.at("normalizers")) normalizer(step, out);
  } else if (type == "Prepend") {
    out.push_back(PrependNormalizer{j.at("prepend").get<std::string>()});
  } else if (type == "Replace") {
    out.push_back(ReplaceNormalizer{string_pattern(j.at("pattern"), "Replace normalizer"),
                                    j.at("content").get<std::string>()});
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    unsupported("normalizer", type, "Unicode normalization is not implemented");
  } else {
    unsupported("normalizer", type, "supported normalizers: Sequence, Prepend, Replace");
  }
}

// Metaspace options. Older files give add_prefix_space (true = "always") instead of
// prepend_scheme; split defaults to true.
Metaspace Parser::metaspace(const json& j) const {
  Metaspace m;
  m.replacement = j.value("replacement", m.replacement);
  if (!utf8_is_valid(m.replacement) || m.replacement.empty() ||
      utf8_decode_char(m.replacement, 0)->length != m.replacement.size()) {
    invalid("the Metaspace replacement is not one character");
  }
  if (j.contains("prepend_scheme")) {
    const auto scheme = j.at("prepend_scheme").get<std::string>();
    if (scheme == "always") {
      m.prepend_scheme = PrependScheme::kAlways;
    } else if (scheme == "first") {
      m.prepend_scheme = PrependScheme::kFirst;
    } else if (scheme == "never") {
      m.prepend_scheme = PrependScheme::kNever;
    } else {
      invalid(fmt::format("unknown Metaspace prepend_scheme '{}'", scheme));
    }
  } else if (j.contains("add_prefix_space")) {
    m.prepend_scheme =
        j.at("add_prefix_space").get<bool>() ? PrependScheme::kAlways : PrependScheme::kNever;
  }
  m.split = j.value("split", true);
  return m;
}

std::optional<Metaspace> Parser::pre_tokenizer(const json& j) const {
  if (j.is_null()) return std::nullopt;
  const auto type = j.at("type").get<std::string>();
  if (type == "Metaspace") return metaspace(j);
  unsupported("pre_tokenizer", type,
              "only SentencePiece-style BPE (no pre-tokenizer, or Metaspace: Llama 2, Mistral, "
              "TinyLlama) is supported; byte-level BPE (GPT-2, Llama 3, Qwen) is a later feature");
}

void Parser::decoder(const json& j, std::vector<Decoder>& out) const {
  if (j.is_null()) return;
  const auto type = j.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const json& step : j.at("decoders")) decoder(step, out);
  } else if (type == "Replace") {
    out.push_back(ReplaceDecoder{string_pattern(j.at("pattern"), "Replace decoder"),
                                 j.at("content").get<std::string>()});
  } else if (type == "ByteFallback") {
    out.push_back(ByteFallbackDecoder{});
  } else if (type == "Fuse") {
    out.push_back(FuseDecoder{});
  } else if (type == "Strip") {
    StripDecoder strip{j.at("content").get<std::string>(), j.at("start").get<size_t>(),
                       j.at("stop").get<size_t>()};
    if (strip.content.empty() || !utf8_is_valid(strip.content) ||
        utf8_decode_char(strip.content, 0)->length != strip.content.size()) {
      invalid("the Strip decoder's content is not one character");
    }
    out.push_back(std::move(strip));
  } else if (type == "Metaspace") {
    out.push_back(metaspace(j));
  } else {
    unsupported("decoder", type,
                "supported decoders: Sequence, Replace, ByteFallback, Fuse, Strip, Metaspace");
  }
}

BpeModel Parser::model(const json& j) const {
  // Old files leave out the type; a model with merges is BPE.
  const auto type = j.contains("type") ? j.at("type").get<std::string>() : std::string("BPE");
  if (type != "BPE") {
    unsupported("model", type, "only BPE models (Llama 2, Mistral, TinyLlama) are supported");
  }
  if (j.contains("dropout") && !j.at("dropout").is_null() && j.at("dropout").get<double>() != 0) {
    invalid("BPE dropout is not supported (it makes tokenization random)");
  }
  for (const char* option : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (j.contains(option) && !j.at(option).is_null() && !j.at(option).get<std::string>().empty()) {
      throw Error(fmt::format("{}: unsupported BPE option {} '{}'", file_, option,
                              j.at(option).get<std::string>()),
                  "only SentencePiece-style BPE (Llama 2, Mistral, TinyLlama) is supported");
    }
  }

  BpeModel m;
  for (const auto& [token, id] : j.at("vocab").items()) {
    const auto value = id.get<int64_t>();
    if (value < 0 || value > INT32_MAX) invalid(fmt::format("token '{}' has id {}", token, value));
    m.vocab.emplace(token, static_cast<int32_t>(value));
  }

  // Merges come as "left right" strings (split at the first space) or as ["left", "right"]
  // pairs. Their rank is their index; should a pair repeat, the later rank wins, as in the
  // reference's hash map.
  const json& merges = j.at("merges");
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& merge = merges[rank];
    std::string left, right;
    if (merge.is_string()) {
      const auto text = merge.get<std::string>();
      const size_t space = text.find(' ');
      if (space == std::string::npos)
        invalid(fmt::format("merge {} '{}' has no space", rank, text));
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      invalid(fmt::format("merge {} is neither \"a b\" nor [\"a\", \"b\"]", rank));
    }
    const auto left_id = m.lookup(left), right_id = m.lookup(right),
               merged_id = m.lookup(left + right);
    if (!left_id || !right_id || !merged_id) {
      invalid(fmt::format("merge {} ('{}' '{}') uses a token that is not in the vocabulary", rank,
                          left, right));
    }
    m.merges.insert_or_assign(pair_key(*left_id, *right_id),
                              Merge{static_cast<int32_t>(rank), *merged_id});
  }

  if (j.contains("unk_token") && !j.at("unk_token").is_null()) {
    m.unk_token = j.at("unk_token").get<std::string>();
    m.unk_id = m.lookup(*m.unk_token);
  }
  m.fuse_unk = j.value("fuse_unk", false);
  m.byte_fallback = j.value("byte_fallback", false);
  m.ignore_merges = j.value("ignore_merges", false);
  return m;
}

// ---- The tokenizer ---------------------------------------------------------------------------

class HfTokenizer final : public Tokenizer {
 public:
  HfTokenizer(const fs::path& tokenizer_json, const json& root);

  std::vector<int32_t> encode(std::string_view text, bool add_special) const override;
  std::string decode(std::span<const int32_t> ids) const override;

  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  std::optional<int32_t> bos_id() const override { return bos_id_; }
  std::optional<int32_t> eos_id() const override { return eos_id_; }
  std::string token_text(int32_t id) const override { return tokens_[checked(id)]; }
  std::string kind() const override { return "hf-bpe"; }

 private:
  size_t checked(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view content) const;
  void apply_post_processor(const Parser& parser, const json& j);
  void apply_tokenizer_config(const fs::path& config_path);

  std::vector<Normalizer> normalizers_;
  std::optional<Metaspace> pre_tokenizer_;
  BpeModel model_;
  std::vector<int32_t> prefix_ids_, suffix_ids_;  // put around the text's ids when add_special
  bool has_decoder_ = false;
  std::vector<Decoder> decoders_;

  std::vector<std::string> tokens_;  // (vocab_size) the string of each id
  std::vector<bool> present_;        // (vocab_size) false for ids no token has
  std::vector<bool> special_;        // (vocab_size) special added tokens, skipped by decode
  IdMap added_;                      // added token content -> id
  std::optional<int32_t> bos_id_, eos_id_;
};

HfTokenizer::HfTokenizer(const fs::path& tokenizer_json, const json& root) {
  const Parser parser(tokenizer_json);
  parser.normalizer(root.value("normalizer", json()), normalizers_);
  pre_tokenizer_ = parser.pre_tokenizer(root.value("pre_tokenizer", json()));
  model_ = parser.model(root.at("model"));
  const json decoder = root.value("decoder", json());
  has_decoder_ = !decoder.is_null();
  parser.decoder(decoder, decoders_);

  // The id space: the model's vocabulary plus the added tokens (which may lie beyond it).
  std::vector<std::pair<int32_t, std::string>> entries;
  for (const auto& [token, id] : model_.vocab) entries.emplace_back(id, token);
  const json added = root.value("added_tokens", json::array());
  for (const json& t : added) {
    const auto id = t.at("id").get<int64_t>();
    if (id < 0 || id > INT32_MAX) parser.invalid(fmt::format("added token id {}", id));
    entries.emplace_back(static_cast<int32_t>(id), t.at("content").get<std::string>());
  }
  int32_t size = 0;
  for (const auto& e : entries) size = std::max(size, e.first + 1);
  tokens_.resize(size);
  present_.resize(size);
  special_.resize(size);
  for (auto& [id, token] : entries) {  // added tokens come last and win, as in the reference
    tokens_[id] = std::move(token);
    present_[id] = true;
  }
  for (const json& t : added) {
    const auto id = t.at("id").get<int32_t>();
    added_.insert_or_assign(t.at("content").get<std::string>(), id);
    if (t.value("special", false)) special_[id] = true;
  }

  apply_post_processor(parser, root.value("post_processor", json()));
  // Without tokenizer_config.json, BOS / EOS are the special tokens the template puts around
  // the text, when it puts exactly one there.
  if (prefix_ids_.size() == 1) bos_id_ = prefix_ids_[0];
  if (suffix_ids_.size() == 1) eos_id_ = suffix_ids_[0];
  const fs::path config = tokenizer_json.parent_path() / "tokenizer_config.json";
  if (fs::exists(config)) apply_tokenizer_config(config);
}

// TemplateProcessing: the "single" template lists SpecialToken items and one Sequence "A" (the
// text); the special tokens before it become the prefix, those after it the suffix. Each
// special token's ids are in "special_tokens".
void HfTokenizer::apply_post_processor(const Parser& parser, const json& j) {
  if (j.is_null()) return;
  const auto type = j.at("type").get<std::string>();
  if (type != "TemplateProcessing") {
    parser.unsupported("post_processor", type, "supported post-processors: TemplateProcessing");
  }
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
      for (const json& id : special.at(name).at("ids")) target.push_back(id.get<int32_t>());
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
  const json config = read_json(config_path);
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
    throw Error(fmt::format("{}: unexpected content ({})", file, e.what()),
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
  if (auto it = added_.find(content); it != added_.end()) return it->second;
  return model_.lookup(content);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool add_special) const {
  if (!utf8_is_valid(text)) {
    throw Error("cannot tokenize text that is not valid UTF-8",
                "give the prompt as UTF-8 text, or as token ids");
  }
  // Normalizers. Prepend adds nothing to an empty text (NormalizedString::prepend).
  std::string normalized(text);
  for (const Normalizer& step : normalizers_) {
    if (const auto* prepend = std::get_if<PrependNormalizer>(&step)) {
      if (!normalized.empty()) normalized.insert(0, prepend->prefix);
    } else if (const auto* replace = std::get_if<ReplaceNormalizer>(&step)) {
      normalized = replace_all(normalized, replace->pattern, replace->content);
    }
  }

  // Pre-tokenizer. Without one, the whole normalized text is one word for the model.
  std::vector<std::string_view> words;
  if (pre_tokenizer_) {
    // Metaspace: spaces become the replacement; "always" puts one in front unless the text
    // already starts with one; "first" does so only for the piece at the start of the input,
    // which (added tokens not being split out of the text here) is always the whole text. An
    // empty text stays empty. With split, the text is cut in front of every replacement
    // character (the delimiter "merged with next"): "▁a▁▁b" -> "▁a", "▁", "▁b".
    const Metaspace& m = *pre_tokenizer_;
    normalized = replace_all(normalized, " ", m.replacement);
    if (m.prepend_scheme != PrependScheme::kNever && !normalized.empty() &&
        !normalized.starts_with(m.replacement)) {
      normalized.insert(0, m.replacement);
    }
    if (m.split) {
      const std::string_view all(normalized);
      size_t start = 0;
      for (size_t hit = all.find(m.replacement, 1); hit != std::string_view::npos;
           hit = all.find(m.replacement, hit + m.replacement.size())) {
        words.push_back(all.substr(start, hit - start));
        start = hit;
      }
      words.push_back(all.substr(start));
    } else {
      words.emplace_back(normalized);
    }
  } else {
    words.emplace_back(normalized);
  }

  std::vector<int32_t> ids;
  if (add_special) ids = prefix_ids_;
  for (std::string_view word : words) model_.tokenize(word, ids);
  if (add_special) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

// ByteFallback (huggingface/tokenizers decoders/byte_fallback.rs): consecutive "<0xXX>" tokens
// are gathered; if their bytes form valid UTF-8 they become one token of that text, otherwise
// every one of them becomes U+FFFD.
std::vector<std::string> byte_fallback(std::vector<std::string> tokens) {
  std::vector<std::string> out;
  std::string bytes;
  size_t byte_tokens = 0;
  const auto flush = [&] {
    if (byte_tokens == 0) return;
    if (utf8_is_valid(bytes)) {
      out.push_back(bytes);
    } else {
      for (size_t i = 0; i < byte_tokens; ++i) out.emplace_back(kUtf8Replacement);
    }
    bytes.clear();
    byte_tokens = 0;
  };
  for (std::string& token : tokens) {
    if (auto byte = parse_byte_piece(token)) {
      bytes.push_back(static_cast<char>(*byte));
      ++byte_tokens;
    } else {
      flush();
      out.push_back(std::move(token));
    }
  }
  flush();
  return out;
}

// Strip: up to `start` leading and `stop` trailing copies of one character, from each token.
std::string strip(std::string token, const StripDecoder& s) {
  std::string_view view(token);
  for (size_t i = 0; i < s.start && view.starts_with(s.content); ++i) {
    view.remove_prefix(s.content.size());
  }
  for (size_t i = 0; i < s.stop && view.ends_with(s.content); ++i) {
    view.remove_suffix(s.content.size());
  }
  return std::string(view);
}

std::string HfTokenizer::decode(std::span<const int32_t> ids) const {
  // Special added tokens are skipped before the decoders see the tokens.
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    if (!special_[checked(id)]) tokens.push_back(tokens_[id]);
  }
  // Tokenizer::decode of the reference joins the tokens with spaces when there is no decoder.
  const auto join = [](const std::vector<std::string>& parts, std::string_view separator) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) out += separator;
      out += parts[i];
    }
    return out;
  };
  if (!has_decoder_) return join(tokens, " ");

  // Each decoder maps the list of token strings to a new list; the last list is concatenated.
  for (const Decoder& step : decoders_) {
    if (const auto* replace = std::get_if<ReplaceDecoder>(&step)) {
      for (std::string& t : tokens) t = replace_all(t, replace->pattern, replace->content);
    } else if (std::holds_alternative<ByteFallbackDecoder>(step)) {
      tokens = byte_fallback(std::move(tokens));
    } else if (std::holds_alternative<FuseDecoder>(step)) {
      tokens = {join(tokens, "")};
    } else if (const auto* s = std::get_if<StripDecoder>(&step)) {
      for (std::string& t : tokens) t = strip(std::move(t), *s);
    } else if (const auto* m = std::get_if<Metaspace>(&step)) {
      // The replacement becomes a space, except in the first token, where (unless the prepend
      // scheme is "never") every replacement is dropped: the one the encoder prepended.
      for (size_t i = 0; i < tokens.size(); ++i) {
        const bool drop = i == 0 && m->prepend_scheme != PrependScheme::kNever;
        tokens[i] = replace_all(tokens[i], m->replacement, drop ? "" : " ");
      }
    }
  }
  return join(tokens, "");
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer(const fs::path& tokenizer_json) {
  const json root = read_json(tokenizer_json);
  try {
    return std::make_unique<HfTokenizer>(tokenizer_json, root);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: unexpected content ({})", tokenizer_json.string(), e.what()),
                "the file does not follow the Hugging Face tokenizer.json format");
  }
}

}  // namespace ds
