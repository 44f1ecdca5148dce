// tokenizer.json normalizers (see tokenizer_hf_normalizer.h).
#include "src/tokenizer/normalizer.h"

namespace ds::hf {

Normalizer::Normalizer(const json& j, const Parser& parser) {
  if (!j.is_null()) add(j, parser);
}

void Normalizer::add(const json& j, const Parser& parser) {
  const std::string type = parser.type(j, "normalizer");
  if (type == "Sequence") {
    for (const json& step : j.at("normalizers")) add(step, parser);
  } else if (type == "NFC") {
    steps_.push_back(Unicode{NormalForm::kNFC});
  } else if (type == "NFD") {
    steps_.push_back(Unicode{NormalForm::kNFD});
  } else if (type == "NFKC") {
    steps_.push_back(Unicode{NormalForm::kNFKC});
  } else if (type == "NFKD") {
    steps_.push_back(Unicode{NormalForm::kNFKD});
  } else if (type == "Lowercase") {
    steps_.push_back(Lowercase{});
  } else if (type == "Prepend") {
    steps_.push_back(Prepend{j.at("prepend").get<std::string>()});
  } else if (type == "Replace") {
    steps_.push_back(Replace{Pattern(j.at("pattern"), parser, "Replace normalizer"),
                             j.at("content").get<std::string>()});
  } else {
    parser.unsupported("normalizer", type,
                       "supported normalizers: Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Prepend, "
                       "Replace");
  }
}

std::string Normalizer::apply(std::string text) const {
  for (const Step& step : steps_) {
    if (const auto* u = std::get_if<Unicode>(&step)) {
      text = unicode_normalize(text, u->form);
    } else if (std::holds_alternative<Lowercase>(step)) {
      text = unicode_lowercase(text);
    } else if (const auto* prepend = std::get_if<Prepend>(&step)) {
      if (!text.empty()) text.insert(0, prepend->prefix);
    } else if (const auto* replace = std::get_if<Replace>(&step)) {
      text = replace_all(text, replace->pattern, replace->content);
    }
  }
  return text;
}

}  // namespace ds::hf
