// tokenizer.json decoders (see tokenizer_hf_decoder.h).
#include "src/tokenizer/decoder.h"

#include <fmt/format.h>

#include "common/json_integer.h"
#include "src/tokenizer/byte_level.h"
#include "src/tokenizer/utf8.h"

namespace ds::hf {
namespace {

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

// ByteLevel: each token whose characters are all byte stand-ins becomes those bytes (any other
// token keeps its own UTF-8 bytes); the bytes of all tokens are one text, made valid UTF-8 the
// way Rust's String::from_utf8_lossy does.
std::string byte_level(const std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& token : tokens) {
    const size_t start = bytes.size();
    bool mapped = true;
    for (size_t pos = 0; pos < token.size() && mapped;) {
      const Utf8Char c = *utf8_decode_char(token, pos);
      if (auto b = byte_level_byte(c.code_point)) {
        bytes.push_back(static_cast<char>(*b));
      } else {
        mapped = false;
      }
      pos += c.length;
    }
    if (!mapped) {
      bytes.resize(start);
      bytes += token;
    }
  }
  return utf8_make_valid(bytes);
}

// ByteFallback (decoders/byte_fallback.rs): consecutive "<0xXX>" tokens are gathered; if their
// bytes form valid UTF-8 they become one token of that text, otherwise every one of them becomes
// U+FFFD.
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

}  // namespace

Decoder::Decoder(const json& j, const Parser& parser) {
  if (j.is_null()) return;
  present_ = true;
  add(j, parser);
}

void Decoder::add(const json& j, const Parser& parser) {
  const std::string type = parser.type(j, "decoder");
  if (type == "Sequence") {
    for (const json& step : j.at("decoders")) add(step, parser);
  } else if (type == "ByteLevel") {
    steps_.push_back(ByteLevel{});
  } else if (type == "Replace") {
    steps_.push_back(Replace{Pattern(j.at("pattern"), parser, "Replace decoder"),
                             j.at("content").get<std::string>()});
  } else if (type == "ByteFallback") {
    steps_.push_back(ByteFallback{});
  } else if (type == "Fuse") {
    steps_.push_back(Fuse{});
  } else if (type == "Strip") {
    const auto count = [&](const char* key) {
      const auto n = json_integer<size_t>(j.at(key));
      if (!n) parser.invalid(fmt::format("the Strip decoder's {} is {}", key, j.at(key).dump()));
      return *n;
    };
    steps_.push_back(
        Strip{parser.one_character(j, "content", "Strip decoder"), count("start"), count("stop")});
  } else if (type == "Metaspace") {
    steps_.push_back(parse_metaspace(j, parser));
  } else {
    parser.unsupported(
        "decoder", type,
        "supported decoders: Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace");
  }
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  // Tokenizer::decode of the reference joins the tokens with spaces when there is no decoder.
  if (!present_) return join(tokens, " ");
  // Each step maps the list of token strings to a new list; the last list is concatenated.
  for (const Step& step : steps_) {
    if (std::holds_alternative<ByteLevel>(step)) {
      tokens = {byte_level(tokens)};
    } else if (const auto* replace = std::get_if<Replace>(&step)) {
      for (std::string& t : tokens) t = replace_all(t, replace->pattern, replace->content);
    } else if (std::holds_alternative<ByteFallback>(step)) {
      tokens = byte_fallback(std::move(tokens));
    } else if (std::holds_alternative<Fuse>(step)) {
      tokens = {join(tokens, "")};
    } else if (const auto* s = std::get_if<Strip>(&step)) {
      for (std::string& t : tokens) {
        std::string_view view(t);
        for (size_t i = 0; i < s->start && view.starts_with(s->content); ++i) {
          view.remove_prefix(s->content.size());
        }
        for (size_t i = 0; i < s->stop && view.ends_with(s->content); ++i) {
          view.remove_suffix(s->content.size());
        }
        t = std::string(view);
      }
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

}  // namespace ds::hf
