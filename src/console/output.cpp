// Checked writes to stdout (SIGPIPE is ignored, so a closed pipe shows up as EPIPE here).
#include "src/console/output.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "common/error.h"

namespace ds {
namespace {

[[noreturn]] void write_failed(int err) {
  if (err == EPIPE) throw OutputClosed();
  throw Error(fmt::format("cannot write to standard output: {}", std::strerror(err)),
              kOutputErrorHint);
}

}  // namespace

void write_stdout(std::string_view text) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) write_failed(errno);
}

void flush_stdout() {
  errno = 0;
  if (std::fflush(stdout) != 0) write_failed(errno);
}

std::string output_error_message(const std::exception& e) {
  if (!std::ferror(stdout)) return {};
  const auto* se = dynamic_cast<const std::system_error*>(&e);
  return fmt::format("cannot write to standard output: {}",
                     se != nullptr ? std::strerror(se->code().value()) : e.what());
}

bool is_output_closed(const std::exception& e) {
  if (dynamic_cast<const OutputClosed*>(&e) != nullptr) return true;
  const auto* se = dynamic_cast<const std::system_error*>(&e);
  return se != nullptr && se->code().value() == EPIPE &&
         (se->code().category() == std::generic_category() ||
          se->code().category() == std::system_category());
}

}  // namespace ds
