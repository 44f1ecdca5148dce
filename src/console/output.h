// Standard output of the commands: a reader that went away (`driftscope show t.h5 | head`) ends
// the command quietly; any other write error (a full disk) is reported.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common/printable.h"

namespace ds {

// The exit code of a command whose stdout (or stderr) was closed by its reader: 128 + SIGPIPE,
// what a shell reports for a process that a closed pipe ended (docs/cli.md, "Exit codes").
inline constexpr int kExitOutputClosed = 141;

// Thrown by write_stdout / flush_stdout when the reader has gone (EPIPE).
struct OutputClosed : std::exception {
  const char* what() const noexcept override { return "standard output was closed"; }
};

// Writes `text` to stdout. Throws OutputClosed on EPIPE, ds::Error on any other failure.
void write_stdout(std::string_view text);

// Flushes stdout, with write_stdout's errors.
void flush_stdout();

// The message for an exception thrown while stdout's error indicator is set (fmt::print's
// std::system_error on a full disk): "cannot write to standard output: <reason>"; empty for any
// other exception.
std::string output_error_message(const std::exception& e);

// The hint that goes with it.
inline constexpr const char* kOutputErrorHint = "check where stdout goes (a full disk?)";

// True for an exception that reports a write into a closed pipe: OutputClosed, or the
// std::system_error with EPIPE that fmt::print throws.
bool is_output_closed(const std::exception& e);

// An argument of print_note: text (a file name holding ESC, a message from a file) with its
// control characters shown escaped (common/printable.h), its line breaks kept; anything else
// as it is. The format string's own "\r" and "\033[K" (the progress line) pass unchanged.
template <typename T>
decltype(auto) note_arg(T&& x) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return printable(std::string_view(x), /*keep_newlines=*/true);
  } else {
    return std::forward<T>(x);
  }
}

// Notes, progress and warnings on stderr: a stderr that cannot be written (a full disk,
// /dev/full, a closed pipe) loses the text, never the command's exit code.
template <typename... T>
void print_note(fmt::format_string<T...> format, T&&... args) noexcept {
  try {
    fmt::print(stderr, fmt::runtime(fmt::string_view(format)), note_arg(std::forward<T>(args))...);
  } catch (...) {
  }
}

}  // namespace ds
