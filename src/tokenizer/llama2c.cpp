// llama2.c tokenizer.bin: loading, and encode/decode that reproduce karpathy/llama2.c run.c.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <queue>
#include <unordered_map>

#include "common/error.h"
#include "src/model/mapped_file.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/utf8.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

// Fixed ids of the llama2.c / SentencePiece Llama vocabulary.
constexpr int32_t kUnkId = 0;
constexpr int32_t kBosId = 1;
constexpr int32_t kEosId = 2;
constexpr int32_t kFirstByteId = 3;  // ids 3..258 are the byte pieces <0x00>..<0xFF>

// run.c starts its search for the best merge at this score and needs a strictly higher one.
constexpr float kNoMergeScore = -1e10f;

// Lets the vocabulary map be searched with a string_view, without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

class Llama2cTokenizer final : public Tokenizer {
 public:
  Llama2cTokenizer(std::vector<std::string> vocab, std::vector<float> scores)
      : vocab_(std::move(vocab)), scores_(std::move(scores)) {
    // Should a file hold the same piece twice, the first id wins (run.c's bsearch over a sorted
    // copy would pick either).
    for (size_t i = 0; i < vocab_.size(); ++i) ids_.emplace(vocab_[i], static_cast<int32_t>(i));
  }

  using Tokenizer::decode;
  using Tokenizer::encode;
  // options.special_in_text has no effect: run.c never matches tokens in the text.
  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override;

  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.size()); }
  bool knows(int32_t id) const override { return id >= 0 && id < vocab_size(); }
  std::optional<int32_t> bos_id() const override { return kBosId; }
  std::optional<int32_t> eos_id() const override { return kEosId; }
  std::string token_text(int32_t id) const override { return vocab_[checked(id)]; }
  std::string kind() const override { return "llama2c"; }
  std::string policy_json() const override {
    // run.c: BOS (1) in front with add_special, never EOS; nothing is matched in the text.
    return fmt::format(
        R"({{"kind":"llama2c","vocab_size":{},"bos_id":{},"eos_id":{},"add_special":{{"prefix":[{}],"suffix":[]}},"adds_bos":true,"adds_eos":false,"special_in_text":false}})",
        vocab_size(), kBosId, kEosId, kBosId);
  }

 private:
  std::optional<int32_t> lookup(std::string_view piece) const {
    auto it = ids_.find(piece);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  size_t checked(int32_t id) const;
  void merge_pairs(std::vector<int32_t>& tokens) const;

  std::vector<std::string> vocab_;  // (vocab_size) raw piece bytes; " " where SentencePiece has "▁"
  std::vector<float> scores_;       // (vocab_size) merge priority: higher merges first
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_;
};

size_t Llama2cTokenizer::checked(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw Error(fmt::format("unknown token id {} (vocabulary has {} tokens)", id, vocab_size()),
                fmt::format("token ids run from 0 to {}; were the ids made with another tokenizer?",
                            vocab_size() - 1));
  }
  return static_cast<size_t>(id);
}

std::vector<int32_t> Llama2cTokenizer::encode(std::string_view text,
                                              const EncodeOptions& options) const {
  std::vector<int32_t> tokens;
  if (options.add_special) tokens.push_back(kBosId);
  if (options.max_tokens != SIZE_MAX) {  // an id stands for one vocabulary piece at most
    size_t cover = 4;                    // or one code point's bytes
    for (const auto& piece : vocab_) cover = std::max(cover, piece.size());
    check_token_budget(tokens.size(), text.size(), cover, options.max_tokens);
  }

  // SentencePiece's add_dummy_prefix: run.c puts the token for " " first when the text is not
  // empty (a vocabulary without it gets none; run.c would emit the id -1).
  if (!text.empty()) {
    if (auto space = lookup(" ")) tokens.push_back(*space);
  }

  // One group per code point, grouped as run.c does: a byte, then the continuation bytes after
  // it, four bytes at most. For valid UTF-8 that is exactly one code point; for invalid input it
  // reproduces run.c's grouping. A group not in the vocabulary becomes its bytes, id = byte + 3.
  for (size_t start = 0; start < text.size();) {
    size_t end = start + 1;
    while (end < text.size() && end - start < 4 &&
           utf8_is_continuation(static_cast<unsigned char>(text[end]))) {
      ++end;
    }
    const std::string_view group = text.substr(start, end - start);
    if (auto id = lookup(group)) {
      tokens.push_back(*id);
    } else {
      for (char c : group) {
        const int32_t id = kFirstByteId + static_cast<unsigned char>(c);
        if (id >= vocab_size()) {
          throw Error(fmt::format("cannot encode byte 0x{:02X}: the {}-token vocabulary has no "
                                  "byte-fallback pieces",
                                  static_cast<unsigned char>(c), vocab_size()),
                      "this tokenizer.bin cannot encode that text; give the prompt as token ids");
        }
        tokens.push_back(id);
      }
    }
    start = end;
  }

  merge_pairs(tokens);
  check_token_budget(tokens.size(), 0, 0, options.max_tokens);
  return tokens;
}

// run.c merges by rescanning the whole sequence for the adjacent pair whose concatenation is in
// the vocabulary with the highest score (the leftmost one on ties), merging it, and repeating
// until no pair is left: quadratic in the text length. This makes the same merges in the same
// order in O(n log n): the symbols form a linked list, and a priority queue holds the candidate
// pairs ordered by (score descending, position ascending). A position is the original index of
// the pair's left symbol; symbols never reorder, so the smallest position is the leftmost pair.
// A symbol's version changes whenever its id changes or it is removed, which marks the queue
// entries that mention it as stale. The BOS token takes part, as in run.c (it never merges).
void Llama2cTokenizer::merge_pairs(std::vector<int32_t>& tokens) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // indices into symbols, -1 at the ends
    uint32_t version = 0;
    bool alive = true;
  };
  struct Candidate {
    float score;
    int32_t left, right;  // symbol indices
    uint32_t left_version, right_version;
    int32_t merged_id;
  };
  const auto lower_priority = [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  };

  const auto n = static_cast<int32_t>(tokens.size());
  std::vector<Symbol> symbols;
  symbols.reserve(tokens.size());
  for (int32_t i = 0; i < n; ++i) symbols.push_back({tokens[i], i - 1, i + 1 < n ? i + 1 : -1});

  std::priority_queue<Candidate, std::vector<Candidate>, decltype(lower_priority)> queue(
      lower_priority);
  std::string joined;
  const auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    joined = vocab_[symbols[left].id];
    joined += vocab_[symbols[right].id];
    const auto merged = lookup(joined);
    if (!merged || !(scores_[*merged] > kNoMergeScore)) return;
    queue.push(
        {scores_[*merged], left, right, symbols[left].version, symbols[right].version, *merged});
  };

  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!queue.empty()) {
    const Candidate best = queue.top();
    queue.pop();
    Symbol& left = symbols[best.left];
    Symbol& right = symbols[best.right];
    if (left.version != best.left_version || right.version != best.right_version) continue;

    left.id = best.merged_id;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = best.left;
    right.alive = false;
    ++left.version;
    ++right.version;
    consider(left.prev);
    consider(best.left);
  }

  tokens.clear();
  for (const Symbol& s : symbols) {
    if (s.alive) tokens.push_back(s.id);
  }
}

std::string Llama2cTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string text;
  for (int32_t id : ids) {
    const std::string& piece = vocab_[checked(id)];
    if (skip_special && (id == kUnkId || id == kBosId || id == kEosId)) continue;
    if (auto byte = parse_byte_piece(piece)) {
      text.push_back(static_cast<char>(*byte));  // raw byte, as run.c prints it
    } else {
      text += piece;
    }
  }
  // The dummy prefix put one space in front of the text: drop exactly that one. (run.c strips it
  // from the first piece after BOS; Hugging Face's decoder strips one leading space of the whole
  // output, which is what is done here, so that both tokenizers decode alike.)
  if (text.starts_with(' ')) text.erase(0, 1);
  return text;
}

// Reads little-endian values from the tokenizer file, with a clear error past its end.
class Reader {
 public:
  Reader(std::span<const std::byte> bytes, fs::path path, std::optional<int32_t> vocab_size)
      : bytes_(bytes), path_(std::move(path)), vocab_size_(vocab_size) {}

  bool at_end() const { return offset_ == bytes_.size(); }

  template <typename T>
  T read(const char* what) {
    T value;
    std::memcpy(&value, take(sizeof(T), what).data(), sizeof(T));
    return value;
  }
  std::string read_string(size_t length, const char* what) {
    auto s = take(length, what);
    return {reinterpret_cast<const char*>(s.data()), s.size()};
  }

  [[noreturn]] void corrupt(const std::string& what) const {
    throw Error(fmt::format("{}: corrupt llama2.c tokenizer: {}", path_.string(), what),
                vocab_size_ ? fmt::format("the file may be truncated, or belong to a model whose "
                                          "vocabulary is not {} tokens (the size the model "
                                          "header gives)",
                                          *vocab_size_)
                            : std::string("the file may be truncated, or not be a llama2.c "
                                          "tokenizer.bin"));
  }

 private:
  std::span<const std::byte> take(size_t n, const char* what) {
    if (n > bytes_.size() - offset_) {
      corrupt(fmt::format("{} ends past the end of the file ({} bytes)", what, bytes_.size()));
    }
    auto s = bytes_.subspan(offset_, n);
    offset_ += n;
    return s;
  }

  std::span<const std::byte> bytes_;
  size_t offset_ = 0;
  fs::path path_;
  std::optional<int32_t> vocab_size_;
};

// Reads vocab_size tokens, or (nullopt) tokens up to the end of the file.
std::unique_ptr<Tokenizer> load(const fs::path& path, std::optional<int32_t> vocab_size) {
  const MappedFile file(path);
  Reader reader(file.bytes(), path, vocab_size);

  const auto max_token_length = reader.read<int32_t>("the header");
  if (max_token_length <= 0) {
    reader.corrupt(fmt::format("max_token_length is {}", max_token_length));
  }
  std::vector<std::string> vocab;
  std::vector<float> scores;
  if (vocab_size) {
    vocab.reserve(*vocab_size);
    scores.reserve(*vocab_size);
  }
  for (int32_t i = 0; vocab_size ? i < *vocab_size : !reader.at_end(); ++i) {
    const std::string what =
        vocab_size ? fmt::format("token {} of {}", i, *vocab_size) : fmt::format("token {}", i);
    scores.push_back(reader.read<float>(what.c_str()));
    const auto length = reader.read<int32_t>(what.c_str());
    if (length < 0) reader.corrupt(fmt::format("{} has length {}", what, length));
    vocab.push_back(reader.read_string(static_cast<size_t>(length), what.c_str()));
  }
  if (vocab.empty()) reader.corrupt("the file holds no tokens");
  return std::make_unique<Llama2cTokenizer>(std::move(vocab), std::move(scores));
}

}  // namespace

std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const fs::path& path, int32_t vocab_size) {
  if (vocab_size <= 0) {
    throw Error(fmt::format("{}: vocabulary size {} is not positive", path.string(), vocab_size),
                "the vocabulary size comes from the model header; is the model file valid?");
  }
  return load(path, vocab_size);
}

std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const fs::path& path) {
  return load(path, std::nullopt);
}

}  // namespace ds
