// tokenizer.json "normalizer": NFC / NFD / NFKC / NFKD and Lowercase (ICU), Prepend, Replace,
// Sequence.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "src/tokenizer/json_common.h"
#include "src/tokenizer/unicode.h"

namespace ds::hf {

class Normalizer {
 public:
  Normalizer() = default;  // the identity (no normalizer in the file)
  Normalizer(const json& j, const Parser& parser);

  // The normalized text. Prepend adds nothing to an empty text (as NormalizedString::prepend).
  std::string apply(std::string text) const;

 private:
  struct Unicode {
    NormalForm form;
  };
  struct Lowercase {};
  struct Prepend {
    std::string prefix;
  };
  struct Replace {
    Pattern pattern;
    std::string content;
  };
  using Step = std::variant<Unicode, Lowercase, Prepend, Replace>;

  void add(const json& j, const Parser& parser);

  std::vector<Step> steps_;  // applied in order
};

}  // namespace ds::hf
