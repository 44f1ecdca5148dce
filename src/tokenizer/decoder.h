// tokenizer.json "decoder": token strings -> text. ByteLevel, Replace, ByteFallback, Fuse, Strip,
// Metaspace and Sequence, with the semantics of huggingface/tokenizers' decode_chain.
#pragma once

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include "src/tokenizer/json_common.h"
#include "src/tokenizer/pretokenizer.h"

namespace ds::hf {

class Decoder {
 public:
  Decoder() = default;  // no decoder in the file: the tokens are joined with spaces
  Decoder(const json& j, const Parser& parser);

  std::string decode(std::vector<std::string> tokens) const;

 private:
  struct ByteLevel {};  // stand-in characters -> bytes, all tokens -> one (invalid UTF-8 -> U+FFFD)
  struct Replace {
    Pattern pattern;  // in each token
    std::string content;
  };
  struct ByteFallback {};  // "<0xXX>" tokens -> bytes
  struct Fuse {};          // all tokens -> one
  struct Strip {
    std::string content;  // one character
    size_t start = 0;     // at most this many leading copies removed from each token
    size_t stop = 0;      // at most this many trailing copies
  };
  using Step = std::variant<ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace>;

  void add(const json& j, const Parser& parser);

  bool present_ = false;
  std::vector<Step> steps_;
};

}  // namespace ds::hf
