// The text-layout kit of the reports (see viewer/text_layout.h).
#include "viewer/text_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/printable.h"

namespace ds::viewer {

size_t display_columns(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  }
  return n;
}

std::string clip(const std::string& s, size_t n) {
  if (display_columns(s) <= n) return s;
  if (n == 0) return {};
  size_t seen = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (seen == n - 1) break;
      ++seen;
    }
  }
  return s.substr(0, i) + "…";
}

std::string pad(const std::string& s, size_t n) {
  const size_t c = display_columns(s);
  return c >= n ? s : s + std::string(n - c, ' ');
}

std::string quote(const std::string& s) {
  return printable_json(
      nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string sci(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == 0) return "0";
  return fmt::format("{:.2e}", x);
}

std::string fix(double x, int digits) {
  if (std::isnan(x)) return "NaN";
  return fmt::format("{:.{}f}", x, digits);
}

std::string rule(const std::string& title, int width) {
  const int rest = std::max(3, width - static_cast<int>(display_columns(title)) - 4);
  std::string r = "── " + title + " ";
  for (int i = 0; i < rest; ++i) r += "─";
  return r;
}

std::string bar(int cells, int width, const char* fill) {
  std::string s;
  for (int i = 0; i < cells; ++i) s += fill;
  return s + std::string(static_cast<size_t>(width - cells), ' ');
}

TerminalText::TerminalText(bool color, int width)
    : color_(color), width_(static_cast<size_t>(width)) {}

void TerminalText::line(const std::string& s) {
  std::string rest = s;
  while (display_columns(rest) > width_) {
    // The last space at which the head still fits.
    size_t cut = std::string::npos, c = 0;
    for (size_t i = 0; i < rest.size(); ++i) {
      if (rest[i] == '\x1b') {
        while (i < rest.size() && rest[i] != 'm') ++i;
        continue;
      }
      if ((static_cast<unsigned char>(rest[i]) & 0xC0) == 0x80) continue;
      if (c >= width_) break;
      if (rest[i] == ' ' && i > kIndent) cut = i;
      ++c;
    }
    if (cut == std::string::npos) break;
    emit(rest.substr(0, cut));
    const size_t next = rest.find_first_not_of(' ', cut);
    rest = std::string(kIndent, ' ') + (next == std::string::npos ? "" : rest.substr(next));
  }
  emit(rest);
}

std::string TerminalText::paint(const std::string& s, const char* code) const {
  return color_ ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : s;
}

std::string TerminalText::fg256(char c, int colour) const {
  return color_ ? fmt::format("\x1b[38;5;{}m{}\x1b[0m", colour, c) : std::string(1, c);
}

void TerminalText::emit(std::string s) {
  s.erase(s.find_last_not_of(' ') + 1);
  text_ += s + "\n";
}

}  // namespace ds::viewer
