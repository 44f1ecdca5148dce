// Run-configuration files: the TOML a run configuration is written in (a flat document of
// `key = value` lines, TOML v1.0's syntax for each), read into entries typed as TOML types them.
#include "src/experiment/run_config_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <map>
#include <utility>

#include "common/error.h"
#include "src/model/text_file.h"

namespace ds {
namespace {

constexpr const char* kFileHint =
    "a run configuration is TOML, one 'field = value' a line, such as dtype = \"bf16\" or "
    "batch = 8 (docs/configurations.md)";

// 0..15 for a hexadecimal digit, else -1.
int hex_value(char c) {
  const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l >= '0' && l <= '9' ? l - '0' : l >= 'a' && l <= 'f' ? l - 'a' + 10 : -1;
}

// The reading of one line of the file, which throws ds::Error naming the file and the line.
class LineParser {
 public:
  LineParser(std::string_view line, const std::string& file, int number)
      : s_(line), file_(file), number_(number) {}

  // The line's entry; false for a blank or comment line.
  bool entry(ConfigFileEntry& e) {
    skip_space();
    if (done()) return false;
    if (s_[i_] == '[') {
      fail(fmt::format("'{}' opens a table; a run configuration has no tables", trimmed()),
           "write every field at the top level, as `driftscope run --dry-run` prints them: "
           "dtype = \"bf16\"");
    }
    e.key = key();
    skip_space();
    if (at('.')) {
      fail(fmt::format("'{}' is a dotted key; a run configuration has no tables", trimmed()),
           "write every field at the top level: dtype = \"bf16\"");
    }
    if (!at('=')) fail("a key is followed by '='", kFileHint);
    ++i_;
    skip_space();
    e.value = value();
    skip_space();
    if (!done()) fail("unexpected text after the value", kFileHint);
    e.line = number_;
    return true;
  }

 private:
  std::string_view s_;
  const std::string& file_;
  int number_;
  size_t i_ = 0;

  [[noreturn]] void fail(const std::string& what, const std::string& hint) const {
    throw Error(fmt::format("{}:{}: {}", file_, number_, what), hint);
  }
  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }
  // The end of the line's content: its end or a comment.
  bool done() const { return i_ >= s_.size() || s_[i_] == '#'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  std::string trimmed() const {
    std::string_view t = s_.substr(0, s_.find('#'));
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    return std::string(t);
  }

  std::string key() {
    if (at('"')) return basic_string();
    if (at('\'')) return literal_string();
    const size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) != 0 ||
                              s_[i_] == '_' || s_[i_] == '-')) {
      ++i_;
    }
    if (i_ == start) fail("a line starts with a key", kFileHint);
    return std::string(s_.substr(start, i_ - start));
  }

  FieldValue value() {
    if (done()) fail("a key has no value", kFileHint);
    const char c = s_[i_];
    if (s_.substr(i_).starts_with("\"\"\"") || s_.substr(i_).starts_with("'''")) {
      fail("a multi-line string; a run-configuration value is one line",
           "write it on one line: dtype = \"bf16\"");
    }
    if (c == '"') return {FieldValue::Kind::string, basic_string()};
    if (c == '\'') return {FieldValue::Kind::string, literal_string()};
    if (c == '[' || c == '{') {
      fail(fmt::format("{} is not a run-configuration value", c == '[' ? "an array" : "a table"),
           "each field takes one string or number: dtype = \"bf16\", batch = 8");
    }
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != ' ' && s_[i_] != '\t' && s_[i_] != '#') ++i_;
    const std::string_view token = s_.substr(start, i_ - start);
    if (token == "true" || token == "false") return {FieldValue::Kind::boolean, std::string(token)};
    if (auto v = number(token)) return *v;
    fail(fmt::format("{} is not a TOML value", token),
         fmt::format("a string is quoted: \"{}\"; a number is written as TOML writes it "
                     "(8, 1_000, 0.7, 1e-3)",
                     token));
  }

  // A TOML integer or float: decimal, 0x / 0o / 0b, '_' between digits, inf and nan.
  std::optional<FieldValue> number(std::string_view t) const {
    std::string sign;
    std::string_view body = t;
    if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
      if (body[0] == '-') sign = "-";
      body.remove_prefix(1);
    }
    if (body == "inf" || body == "nan")
      return FieldValue{FieldValue::Kind::real, sign + std::string(body)};
    if (sign.empty() && t.size() > 2 && t[0] == '0' &&
        (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')) {
      return based_integer(t);
    }
    std::string digits;  // the token without '_', each '_' between two digits
    size_t k = 0;
    const auto run = [&] {  // one digit or more, with single '_' between them
      const size_t from = digits.size();
      while (k < body.size()) {
        if (std::isdigit(static_cast<unsigned char>(body[k])) != 0) {
          digits += body[k++];
        } else if (body[k] == '_' && digits.size() > from && k + 1 < body.size() &&
                   std::isdigit(static_cast<unsigned char>(body[k + 1])) != 0) {
          ++k;
        } else {
          break;
        }
      }
      return digits.size() > from;
    };
    if (!run()) return std::nullopt;
    const std::string integer_part = digits;
    bool real = false;
    if (k < body.size() && body[k] == '.') {
      digits += body[k++];
      if (!run()) return std::nullopt;
      real = true;
    }
    if (k < body.size() && (body[k] == 'e' || body[k] == 'E')) {
      digits += body[k++];
      if (k < body.size() && (body[k] == '+' || body[k] == '-')) digits += body[k++];
      if (!run()) return std::nullopt;
      real = true;
    }
    if (k != body.size()) return std::nullopt;  // a date, a time, a word
    if (integer_part.size() > 1 && integer_part[0] == '0') {
      fail(fmt::format("{} has a leading zero, which TOML does not allow", t),
           "write the number without it");
    }
    return FieldValue{real ? FieldValue::Kind::real : FieldValue::Kind::integer, sign + digits};
  }

  // 0x.., 0o.., 0b..: an unsigned integer, written back in decimal.
  FieldValue based_integer(std::string_view t) const {
    const int base = t[1] == 'x' ? 16 : t[1] == 'o' ? 8 : 2;
    uint64_t v = 0;
    bool any = false;
    for (size_t k = 2; k < t.size(); ++k) {
      if (t[k] == '_' && any && k + 1 < t.size() && t[k + 1] != '_') continue;
      const int d = hex_value(t[k]);
      if (d < 0 || d >= base) fail(fmt::format("{} is not a TOML value", t), kFileHint);
      if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) {
        fail(fmt::format("{} is larger than 2^64 - 1", t),
             "docs/configurations.md lists each field's values");
      }
      v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
      any = true;
    }
    if (!any) fail(fmt::format("{} is not a TOML value", t), kFileHint);
    return {FieldValue::Kind::integer, std::to_string(v)};
  }

  // "...": TOML's escapes; control characters other than tab are refused.
  std::string basic_string() {
    std::string out;
    ++i_;
    while (true) {
      if (i_ >= s_.size()) fail("a string is not closed on its line", kFileHint);
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t')
        fail("a control character in a string", kFileHint);
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("a string is not closed on its line", kFileHint);
      const char e = s_[i_++];
      if (e == 'u' || e == 'U') {
        out += code_point(e == 'u' ? 4 : 8);
        continue;
      }
      static constexpr std::pair<char, char> kEscapes[] = {{'"', '"'},  {'\\', '\\'}, {'b', '\b'},
                                                           {'t', '\t'}, {'n', '\n'},  {'f', '\f'},
                                                           {'r', '\r'}};
      const auto* it = std::find_if(std::begin(kEscapes), std::end(kEscapes),
                                    [&](const auto& x) { return x.first == e; });
      if (it == std::end(kEscapes)) fail(fmt::format("'\\{}' is not a TOML escape", e), kFileHint);
      out += it->second;
    }
  }

  // \uXXXX, \UXXXXXXXX: an ASCII character (no field's value holds another, so a key or a value
  // that holds one is refused here, as it would be by its field).
  char code_point(size_t n) {
    if (i_ + n > s_.size()) fail("a \\u escape is cut short", kFileHint);
    uint32_t cp = 0;
    for (size_t k = 0; k < n; ++k) {
      const int d = hex_value(s_[i_ + k]);
      if (d < 0) fail("a \\u escape takes hexadecimal digits", kFileHint);
      cp = cp * 16 + static_cast<uint32_t>(d);
    }
    i_ += n;
    if (cp >= 0x80) {
      fail(fmt::format("\\u{:04X} is not ASCII: no run-configuration key or value holds it", cp),
           "docs/configurations.md lists each field's values");
    }
    return static_cast<char>(cp);
  }

  // '...': no escapes.
  std::string literal_string() {
    const size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != '\'') {
      if (static_cast<unsigned char>(s_[i_]) < 0x20 && s_[i_] != '\t') {
        fail("a control character in a string", kFileHint);
      }
      ++i_;
    }
    if (i_ >= s_.size()) fail("a string is not closed on its line", kFileHint);
    return std::string(s_.substr(start, i_++ - start));
  }
};

std::string canonical_key(std::string key) {
  for (char& ch : key) ch = ch == '-' ? '_' : ch;
  return key;
}

}  // namespace

std::vector<ConfigFileEntry> read_config_entries(std::string_view text, const std::string& file) {
  if (text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  std::vector<ConfigFileEntry> out;
  std::map<std::string, int> seen;  // canonical key -> its line
  int number = 0;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t nl = text.find('\n', at);
    std::string_view line = text.substr(at, nl == std::string_view::npos ? nl : nl - at);
    at = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++number;
    if (line.ends_with('\r')) line.remove_suffix(1);
    ConfigFileEntry e;
    if (!LineParser(line, file, number).entry(e)) continue;
    const auto [it, fresh] = seen.emplace(canonical_key(e.key), number);
    if (!fresh) {
      throw Error(fmt::format("{}:{}: '{}' is given twice (first on line {})", file, number, e.key,
                              it->second),
                  "give each field once");
    }
    e.field = find_run_config_field(e.key);
    out.push_back(std::move(e));
  }
  return out;
}

void apply_config_entries(RunConfig& c, const std::vector<ConfigFileEntry>& entries,
                          const std::string& file,
                          const std::function<bool(const RunConfigField&)>& given,
                          const std::function<std::string(const std::string& key)>& flag_of) {
  for (const auto& e : entries) {
    if (e.field == nullptr) {
      const std::string flag = flag_of ? flag_of(e.key) : std::string();
      if (!flag.empty()) {
        throw Error(fmt::format("{}: unknown key '{}': {} is an option of the command line, not "
                                "a run-configuration field",
                                file, e.key, flag),
                    fmt::format("give {} on the command line, not in the file", flag));
      }
      throw Error(fmt::format("{}: unknown key '{}'", file, e.key),
                  "keys are run-config fields: dtype, accum, batch, gemm_policy, split_k, tp, ... "
                  "(docs/configurations.md)");
    }
    if (given && given(*e.field)) continue;  // the command line's wins
    try {
      e.field->set(c, *e.field, e.value);
    } catch (const Error& err) {
      throw Error(fmt::format("{}: bad value for '{}': {}", file, e.key, err.what()), err.hint());
    }
  }
}

RunConfig config_from_toml(std::string_view text, const std::string& file, RunConfig base) {
  apply_config_entries(base, read_config_entries(text, file), file);
  return base;
}

}  // namespace ds
