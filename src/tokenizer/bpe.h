// The BPE model of tokenizer.json: vocabulary, merges by rank, byte_fallback, unk handling,
// ignore_merges, and a cache of tokenized words (the same words recur throughout a text).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/tokenizer/json_common.h"

namespace ds::hf {

class BpeModel {
 public:
  // Reads "model" of a tokenizer.json; ds::Error for other model types and unsupported options.
  BpeModel(const json& j, const Parser& parser);

  // Appends the ids of one word (a pre-tokenized piece, or the whole text without a
  // pre-tokenizer). Thread-safe.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> lookup(std::string_view token) const {
    auto it = vocab_.find(token);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
  }
  const IdMap& vocab() const { return vocab_; }
  bool byte_fallback() const { return byte_fallback_; }
  // The most bytes of a word one id can stand for (the longest vocabulary entry; an unknown
  // code point is 4 bytes at most); 0 when unbounded (fuse_unk: one id for any run of them).
  size_t max_cover() const;

 private:
  struct Merge {
    int32_t rank;       // lower merges first
    int32_t merged_id;  // the id of left + right
  };
  // (left id, right id) -> merge, open addressing with linear probing: merging looks up every
  // adjacent pair, and one probe into a flat array is several times faster than a node-based map.
  class MergeTable {
   public:
    void reserve(size_t n);
    void insert_or_assign(int32_t left, int32_t right, Merge merge);
    const Merge* find(int32_t left, int32_t right) const {
      const uint64_t key = pair_key(left, right);
      for (size_t slot = hash(key);; slot = (slot + 1) & mask_) {
        if (keys_[slot] == key) return &values_[slot];
        if (keys_[slot] == kEmpty) return nullptr;
      }
    }

   private:
    static constexpr uint64_t kEmpty = ~uint64_t{0};  // no pair of non-negative ids has this key
    static uint64_t pair_key(int32_t left, int32_t right) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
             static_cast<uint32_t>(right);
    }
    size_t hash(uint64_t key) const {
      return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
    }

    std::vector<uint64_t> keys_ = {kEmpty};
    std::vector<Merge> values_ = {Merge{}};
    size_t mask_ = 0;
    size_t size_ = 0;
  };

  const Merge* find_merge(int32_t left, int32_t right) const { return merges_.find(left, right); }
  std::optional<int32_t> char_id(std::string_view ch, char32_t c) const {
    if (c < char_ids_.size()) {
      if (char_ids_[c] < 0) return std::nullopt;
      return char_ids_[c];
    }
    return lookup(ch);
  }
  void tokenize_uncached(std::string_view word, std::vector<int32_t>& out) const;
  void merge_all(std::vector<int32_t>& ids) const;

  IdMap vocab_;
  std::vector<int32_t> char_ids_;  // (65536) id of each one-character token below U+10000, or -1
  MergeTable merges_;
  std::optional<std::string> unk_token_;
  std::optional<int32_t> unk_id_;  // unset when unk_token is not in the vocabulary
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;

  // Words of up to kMaxCachedWordBytes, until the cache holds kCacheCapacity of them.
  static constexpr size_t kMaxCachedWordBytes = 256;
  static constexpr size_t kCacheCapacity = 200'000;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace ds::hf
