// tokenizer.json pre-tokenizers (see tokenizer_hf_pretokenizer.h).
#include "src/tokenizer/pretokenizer.h"

#include <fmt/format.h>

#include <algorithm>

#include "src/tokenizer/byte_level.h"

namespace ds::hf {
namespace {

// The regex of GPT-2 that ByteLevel splits with when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace

Metaspace parse_metaspace(const json& j, const Parser& parser) {
  Metaspace m;
  if (j.contains("replacement"))
    m.replacement = parser.one_character(j, "replacement", "Metaspace");
  if (j.contains("prepend_scheme")) {
    const auto scheme = j.at("prepend_scheme").get<std::string>();
    if (scheme == "always") {
      m.prepend_scheme = PrependScheme::kAlways;
    } else if (scheme == "first") {
      m.prepend_scheme = PrependScheme::kFirst;
    } else if (scheme == "never") {
      m.prepend_scheme = PrependScheme::kNever;
    } else {
      parser.invalid(fmt::format("unknown Metaspace prepend_scheme '{}'", scheme));
    }
  } else if (j.contains("add_prefix_space")) {
    m.prepend_scheme =
        j.at("add_prefix_space").get<bool>() ? PrependScheme::kAlways : PrependScheme::kNever;
  }
  m.split = j.value("split", true);
  return m;
}

PreTokenizer::PreTokenizer(const json& j, const Parser& parser) {
  if (!j.is_null()) add(j, parser);
}

PreTokenizer::Behavior PreTokenizer::parse_behavior(const json& j, const Parser& parser) {
  const auto name = j.get<std::string>();
  if (name == "Removed") return Behavior::kRemoved;
  if (name == "Isolated") return Behavior::kIsolated;
  if (name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::kMergedWithNext;
  if (name == "Contiguous") return Behavior::kContiguous;
  parser.invalid(fmt::format("unknown Split behavior '{}'", name));
}

void PreTokenizer::add(const json& j, const Parser& parser) {
  const std::string type = parser.type(j, "pre_tokenizer");
  if (type == "Sequence") {
    for (const json& step : j.at("pretokenizers")) add(step, parser);
  } else if (type == "Split") {
    steps_.push_back(Split{Pattern(j.at("pattern"), parser, "Split pre_tokenizer"),
                           parse_behavior(j.at("behavior"), parser), j.value("invert", false)});
  } else if (type == "ByteLevel") {
    ByteLevel b{j.value("add_prefix_space", true), std::nullopt};
    if (j.value("use_regex", true)) {
      b.gpt2_split =
          Split{Pattern(json{{"Regex", kGpt2Pattern}}, parser, "ByteLevel pre_tokenizer"),
                Behavior::kIsolated};
    }
    steps_.push_back(std::move(b));
  } else if (type == "Metaspace") {
    const Metaspace m = parse_metaspace(j, parser);
    steps_.push_back(MetaspaceStep{
        m, Split{Pattern(json{{"String", m.replacement}}, parser, "Metaspace pre_tokenizer"),
                 Behavior::kMergedWithNext}});
  } else if (type == "Digits") {
    // Each numeric character (Unicode N) is a delimiter; individual_digits keeps them one by
    // one, else runs of them (and of the rest) stay together.
    const bool individual = j.value("individual_digits", false);
    steps_.push_back(Split{Pattern(json{{"Regex", "\\p{N}"}}, parser, "Digits pre_tokenizer"),
                           individual ? Behavior::kIsolated : Behavior::kContiguous});
  } else {
    parser.unsupported("pre_tokenizer", type,
                       "supported pre-tokenizers: Sequence, Split, ByteLevel, Metaspace, Digits");
  }
}

void PreTokenizer::apply(std::vector<Piece>& pieces) const {
  for (const Step& step : steps_) {
    if (const auto* s = std::get_if<Split>(&step)) {
      std::vector<Piece> out;
      out.reserve(pieces.size());
      for (Piece& piece : pieces) split(*s, std::move(piece), out);
      pieces = std::move(out);
    } else if (const auto* b = std::get_if<ByteLevel>(&step)) {
      byte_level(*b, pieces);
    } else if (const auto* m = std::get_if<MetaspaceStep>(&step)) {
      metaspace(*m, pieces);
    }
  }
}

// NormalizedString::split of huggingface/tokenizers: the matches and the gaps between them cover
// the text; the behaviour decides which are dropped and which are glued to a neighbour.
void PreTokenizer::split(const Split& s, Piece&& piece, std::vector<Piece>& out) {
  const std::string& text = piece.text;
  if (text.empty()) return;
  std::vector<Regex::Span> matches;
  s.pattern.find_all(text, matches);
  if (matches.empty() &&
      !s.invert) {  // no delimiter: the piece stays whole, whatever the behaviour
    out.push_back(std::move(piece));
    return;
  }

  struct Part {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Part> parts;
  size_t prev = 0;
  for (const auto& [begin, end] : matches) {
    if (prev < begin) parts.push_back({prev, begin, false});
    parts.push_back({begin, end, true});
    prev = end;
  }
  if (prev < text.size()) parts.push_back({prev, text.size(), false});
  if (s.invert) {
    for (Part& p : parts) p.is_match = !p.is_match;
  }

  // (begin, end, remove) after the behaviour.
  struct Cut {
    size_t begin, end;
    bool remove;
  };
  std::vector<Cut> cuts;
  bool previous_match = false;
  switch (s.behavior) {
    case Behavior::kIsolated:
      for (const Part& p : parts) cuts.push_back({p.begin, p.end, false});
      break;
    case Behavior::kRemoved:
      for (const Part& p : parts) cuts.push_back({p.begin, p.end, p.is_match});
      break;
    case Behavior::kContiguous:
      for (const Part& p : parts) {
        if (p.is_match == previous_match && !cuts.empty()) {
          cuts.back().end = p.end;
        } else {
          cuts.push_back({p.begin, p.end, false});
        }
        previous_match = p.is_match;
      }
      break;
    case Behavior::kMergedWithPrevious:
      for (const Part& p : parts) {
        if (p.is_match && !previous_match && !cuts.empty()) {
          cuts.back().end = p.end;
        } else {
          cuts.push_back({p.begin, p.end, false});
        }
        previous_match = p.is_match;
      }
      break;
    case Behavior::kMergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->is_match && !previous_match && !cuts.empty()) {
          cuts.back().begin = it->begin;
        } else {
          cuts.push_back({it->begin, it->end, false});
        }
        previous_match = it->is_match;
      }
      std::reverse(cuts.begin(), cuts.end());
      break;
  }
  for (const Cut& c : cuts) {
    if (c.remove || c.begin == c.end) continue;
    out.push_back({text.substr(c.begin, c.end - c.begin), piece.at_origin && c.begin == 0});
  }
}

// ByteLevel: a space in front of each piece (add_prefix_space), GPT-2's split (use_regex), then
// every byte becomes its printable stand-in character.
void PreTokenizer::byte_level(const ByteLevel& b, std::vector<Piece>& pieces) {
  if (b.add_prefix_space) {
    for (Piece& p : pieces) {
      if (!p.text.starts_with(' ')) p.text.insert(p.text.begin(), ' ');
    }
  }
  if (b.gpt2_split) {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (Piece& piece : pieces) split(*b.gpt2_split, std::move(piece), out);
    pieces = std::move(out);
  }
  for (Piece& p : pieces) {
    std::string mapped;
    mapped.reserve(p.text.size() * 2);
    byte_level_encode(p.text, mapped);
    p.text = std::move(mapped);
  }
}

// Metaspace: spaces become the replacement; "always" puts one in front of every piece that does
// not start with one, "first" only of the piece at the start of the input. With split, each piece
// is cut in front of every replacement character: "▁a▁▁b" -> "▁a", "▁", "▁b".
void PreTokenizer::metaspace(const MetaspaceStep& step, std::vector<Piece>& pieces) {
  const Metaspace& m = step.options;
  for (Piece& p : pieces) {
    p.text = replace_all(p.text, " ", m.replacement);
    const bool prepend = m.prepend_scheme == PrependScheme::kAlways ||
                         (m.prepend_scheme == PrependScheme::kFirst && p.at_origin);
    if (prepend && !p.text.starts_with(m.replacement)) p.text.insert(0, m.replacement);
  }
  if (!m.split) return;
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece& piece : pieces) split(step.by_replacement, std::move(piece), out);
  pieces = std::move(out);
}

}  // namespace ds::hf
