// tokenizer.json BPE model (see tokenizer_hf_bpe.h), with the semantics of huggingface/tokenizers'
// models/bpe (BPE::tokenize and Word::merge_all).
#include "src/tokenizer/bpe.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>

#include "common/error.h"
#include "common/json_integer.h"
#include "src/tokenizer/utf8.h"

namespace ds::hf {

void BpeModel::MergeTable::reserve(size_t n) {
  size_t capacity = 1;
  while (capacity < 2 * n + 1) capacity <<= 1;  // at most half full
  keys_.assign(capacity, kEmpty);
  values_.assign(capacity, Merge{});
  mask_ = capacity - 1;
  size_ = 0;
}

void BpeModel::MergeTable::insert_or_assign(int32_t left, int32_t right, Merge merge) {
  if (2 * (size_ + 1) > keys_.size()) {
    // Grow: reinsert everything into a table twice the size.
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<Merge> values = std::move(values_);
    reserve(size_ + 1);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] != kEmpty) {
        insert_or_assign(static_cast<int32_t>(keys[i] >> 32), static_cast<int32_t>(keys[i]),
                         values[i]);
      }
    }
  }
  const uint64_t key = pair_key(left, right);
  size_t slot = hash(key);
  while (keys_[slot] != kEmpty && keys_[slot] != key) slot = (slot + 1) & mask_;
  if (keys_[slot] == kEmpty) ++size_;
  keys_[slot] = key;
  values_[slot] = merge;
}

size_t BpeModel::max_cover() const {
  if (fuse_unk_) return 0;
  size_t longest = 4;
  for (const auto& [token, id] : vocab_) longest = std::max(longest, token.size());
  return longest;
}

BpeModel::BpeModel(const json& j, const Parser& parser) {
  if (!j.is_object()) parser.invalid("\"model\" is not an object");
  // Old files leave out the type; a model with merges is BPE.
  const auto type = j.contains("type") ? j.at("type").get<std::string>() : std::string("BPE");
  if (type != "BPE") {
    parser.unsupported(
        "model", type,
        "only BPE models are supported (Llama 2/3, Mistral, Qwen2/2.5/3, TinyLlama)");
  }
  if (j.contains("dropout") && !j.at("dropout").is_null() && j.at("dropout").get<double>() != 0) {
    parser.invalid("BPE dropout is not supported (it makes tokenization random)");
  }
  for (const char* option : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (j.contains(option) && !j.at(option).is_null() && !j.at(option).get<std::string>().empty()) {
      throw Error(fmt::format("{}: unsupported BPE option {} '{}'", parser.file(), option,
                              j.at(option).get<std::string>()),
                  "word-piece style BPE (prefix/suffix markers) is not supported");
    }
  }

  const json& vocab = j.at("vocab");
  vocab_.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    const auto value = json_integer<int32_t>(id, 0, kMaxTokenId);
    if (!value) {
      parser.invalid(fmt::format("token '{}' has id {}, not a whole number in 0..{}", token,
                                 id.dump(), kMaxTokenId));
    }
    vocab_.emplace(token, *value);
  }
  char_ids_.assign(0x10000, -1);
  for (const auto& [token, id] : vocab_) {
    const auto c = utf8_decode_char(token, 0);
    if (c && c->length == token.size() && c->code_point < char_ids_.size()) {
      char_ids_[c->code_point] = id;
    }
  }

  // Merges come as "left right" strings (split at the space) or as ["left", "right"] pairs. Their
  // rank is their index; should a pair repeat, the later rank wins, as in the reference's map.
  const json& merges = j.at("merges");
  merges_.reserve(merges.size());
  std::string left, right;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& merge = merges[rank];
    if (merge.is_string()) {
      const auto& text = merge.get_ref<const std::string&>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        parser.invalid(
            fmt::format("merge {} '{}' is not two tokens separated by one space", rank, text));
      }
      left.assign(text, 0, space);
      right.assign(text, space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      parser.invalid(fmt::format("merge {} is neither \"a b\" nor [\"a\", \"b\"]", rank));
    }
    const auto left_id = lookup(left), right_id = lookup(right), merged_id = lookup(left + right);
    if (!left_id || !right_id || !merged_id) {
      parser.invalid(fmt::format("merge {} ('{}' '{}') uses a token that is not in the vocabulary",
                                 rank, left, right));
    }
    merges_.insert_or_assign(*left_id, *right_id, Merge{static_cast<int32_t>(rank), *merged_id});
  }

  if (j.contains("unk_token") && !j.at("unk_token").is_null()) {
    unk_token_ = j.at("unk_token").get<std::string>();
    unk_id_ = lookup(*unk_token_);
  }
  fuse_unk_ = j.value("fuse_unk", false);
  byte_fallback_ = j.value("byte_fallback", false);
  ignore_merges_ = j.value("ignore_merges", false);
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  tokenize_uncached(word, out);
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) {
      cache_.try_emplace(std::string(word), out.begin() + static_cast<ptrdiff_t>(first), out.end());
    }
  }
}

// BPE::tokenize of huggingface/tokenizers for one word. Each character becomes its vocabulary id;
// failing that, with byte_fallback, the ids of its "<0xXX>" byte pieces; failing that, unk_token
// (runs of unknown characters fused into one when fuse_unk; dropped silently when there is no
// unk_token). Then the merges are applied.
void BpeModel::tokenize_uncached(std::string_view word, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    if (auto id = lookup(word)) {  // a word that is a token is taken whole
      out.push_back(*id);
      return;
    }
  }

  std::vector<int32_t> ids;
  ids.reserve(word.size());
  bool pending_unk = false;  // an unknown character (or, with fuse_unk, a run of them) to add
  const auto flush_unk = [&] {
    if (!pending_unk) return;
    if (!unk_id_) {
      throw Error(fmt::format("unk_token '{}' is not in the vocabulary", *unk_token_),
                  "the tokenizer.json is inconsistent; its text cannot be tokenized");
    }
    ids.push_back(*unk_id_);
    pending_unk = false;
  };
  for (size_t pos = 0; pos < word.size();) {
    const Utf8Char c = *utf8_decode_char(word, pos);  // the text was validated
    const std::string_view ch = word.substr(pos, c.length);
    pos += c.length;

    if (auto id = char_id(ch, c.code_point)) {
      flush_unk();
      ids.push_back(*id);
      continue;
    }
    if (byte_fallback_) {
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
    if (!unk_token_) continue;
    if (!fuse_unk_) flush_unk();
    pending_unk = true;
  }
  flush_unk();

  merge_all(ids);
  out.insert(out.end(), ids.begin(), ids.end());
}

// Word::merge_all of huggingface/tokenizers: repeatedly merge the pair with the lowest rank, the
// leftmost one on ties, until no pair has a merge. The symbols form a linked list and the
// candidate pairs wait in a priority queue, so a long word costs O(n log n). A queue entry is
// stale when its left symbol is gone or has no right neighbour any more, or when the pair now
// there does not merge into the entry's merged id (the same test as the reference).
void BpeModel::merge_all(std::vector<int32_t>& ids) const {
  if (ids.size() < 2) return;
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

  std::vector<Candidate> storage;
  storage.reserve(ids.size());
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(lower_priority)> queue(
      lower_priority, std::move(storage));
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

}  // namespace ds::hf
