// tokenizer.json "pre_tokenizer": cuts the normalized text into the pieces ("words") the model
// tokenizes one by one. Split (String or Regex pattern, any delimiter behaviour, invert),
// ByteLevel, Metaspace, Digits and Sequence, with the semantics of huggingface/tokenizers.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "src/tokenizer/json_common.h"

namespace ds::hf {

struct Piece {
  std::string text;
  bool at_origin = false;  // starts where the input text starts (Metaspace prepend_scheme "first")
};

// Metaspace (pre-tokenizer and decoder): spaces become `replacement` ("▁"), one is put in front.
enum class PrependScheme { kAlways, kFirst, kNever };
struct Metaspace {
  std::string replacement = "\u2581";
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;  // pre-tokenizer only: split in front of every replacement character
};
// Reads the options; older files give add_prefix_space (true = "always") for prepend_scheme.
Metaspace parse_metaspace(const json& j, const Parser& parser);

class PreTokenizer {
 public:
  PreTokenizer() = default;  // none in the file: each piece stays whole
  PreTokenizer(const json& j, const Parser& parser);

  // Runs every step on every piece, in order; empty pieces are dropped.
  void apply(std::vector<Piece>& pieces) const;

 private:
  // What happens to the matched delimiters (SplitDelimiterBehavior).
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
  struct Split {
    Pattern pattern;
    Behavior behavior;
    bool invert = false;  // the pattern marks what is *not* a delimiter
  };
  struct ByteLevel {
    bool add_prefix_space;  // a space in front of every piece that does not start with one
    std::optional<Split> gpt2_split;  // set when use_regex
  };
  struct MetaspaceStep {
    Metaspace options;
    Split by_replacement;  // MergedWithNext on the replacement character, used when options.split
  };
  using Step = std::variant<Split, ByteLevel, MetaspaceStep>;

  void add(const json& j, const Parser& parser);
  static Behavior parse_behavior(const json& j, const Parser& parser);
  static void split(const Split& s, Piece&& piece, std::vector<Piece>& out);
  static void byte_level(const ByteLevel& b, std::vector<Piece>& pieces);
  static void metaspace(const MetaspaceStep& step, std::vector<Piece>& pieces);

  std::vector<Step> steps_;
};

}  // namespace ds::hf
