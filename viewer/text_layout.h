// The text-layout kit of the reports: display width, padding and clipping of UTF-8 text, quoted
// tokens, numbers as every report (terminal and HTML) shows them, section rules and bars, and the
// terminal's line writer with its wrapping and ANSI colours.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace ds::viewer {

// Display columns of s: code points, not counting ANSI escape sequences (wide characters are
// counted as one).
size_t display_columns(const std::string& s);

// The first `n` code points of s, with "…" when cut.
std::string clip(const std::string& s, size_t n);

// s padded with spaces on the right to `n` display columns (a longer s is returned as is).
std::string pad(const std::string& s, size_t n);

// A quoted, escaped string (newlines as \n, DEL and C1 controls as \u007f, \u009b), invalid UTF-8
// replaced.
std::string quote(const std::string& s);

// Numbers as the reports show them: "1.23e-04" / "0.1235"; NaN and infinities spelled out.
std::string sci(double x);
std::string fix(double x, int digits = 4);

// A section rule "── title ───…" filling `width` columns (at least three dashes after the title).
std::string rule(const std::string& title, int width);

// A bar of `cells` times `fill` (one column each), padded with spaces to `width` columns.
std::string bar(int cells, int width, const char* fill);

// The lines of a terminal report: a line wider than the report is wrapped at spaces, continuing
// indented to the column where every section's text starts; trailing blanks are dropped. The
// colour helpers return their text unchanged when colours are off.
class TerminalText {
 public:
  TerminalText(bool color, int width);
  // Appends a line; a line wider than the report is wrapped at spaces, continuing indented.
  void line(const std::string& s = {});
  std::string paint(const std::string& s, const char* code) const;
  std::string bold(const std::string& s) const { return paint(s, "1"); }
  std::string dim(const std::string& s) const { return paint(s, "2"); }
  std::string red(const std::string& s) const { return paint(s, "31"); }
  std::string green(const std::string& s) const { return paint(s, "32"); }
  std::string yellow(const std::string& s) const { return paint(s, "33"); }
  std::string fg256(char c, int colour) const;
  bool color() const { return color_; }
  std::string str() && { return std::move(text_); }

 private:
  void emit(std::string s);              // without trailing blanks
  static constexpr size_t kIndent = 10;  // the column where every section's text starts
  bool color_;
  size_t width_;
  std::string text_;
};

}  // namespace ds::viewer
