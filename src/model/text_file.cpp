// Bounded reads of small text files (POSIX read, so that pipes and devices are read in chunks).
#include "src/model/text_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "src/model/memory.h"

namespace ds {
namespace {

// Closes the descriptor on every path out of read_text_file.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

namespace {

std::string read_bounded(const std::filesystem::path& path, uint64_t max_bytes,
                         const std::string& what, const std::string& hint, bool regular_only) {
  const std::string name = path.string();
  // O_NONBLOCK for a file that must be regular: a FIFO opens at once and is refused below
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | (regular_only ? O_NONBLOCK : 0))};
  if (f.fd < 0) {
    throw Error(fmt::format("cannot read {} '{}': {}", what, name, std::strerror(errno)), hint);
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    throw Error(fmt::format("cannot read {} '{}': {}", what, name, std::strerror(errno)), hint);
  }
  if (S_ISDIR(st.st_mode)) throw Error(fmt::format("{} '{}' is a directory", what, name), hint);
  if (regular_only && !S_ISREG(st.st_mode)) {
    throw Error(fmt::format("{} '{}' is not a regular file", what, name), hint);
  }
  const std::string too_large =
      fmt::format("{} '{}' is larger than the limit of {}", what, name, format_bytes(max_bytes));
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) {
    throw Error(too_large, hint);
  }
  // Pipes and devices have no size: read in chunks, one byte past the limit at most.
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(fmt::format("cannot read {} '{}': {}", what, name, std::strerror(errno)), hint);
    }
    if (n == 0) break;
    if (text.size() + static_cast<uint64_t>(n) > max_bytes) throw Error(too_large, hint);
    text.append(buf, static_cast<size_t>(n));
  }
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    throw Error(
        fmt::format("{} '{}' is not a text file (a NUL byte at offset {})", what, name, nul), hint);
  }
  return text;
}

}  // namespace

std::string read_text_file(const std::filesystem::path& path, uint64_t max_bytes,
                           const std::string& what, const std::string& hint) {
  return read_bounded(path, max_bytes, what, hint, /*regular_only=*/false);
}

std::string read_regular_text_file(const std::filesystem::path& path, uint64_t max_bytes,
                                   const std::string& what, const std::string& hint) {
  return read_bounded(path, max_bytes, what, hint, /*regular_only=*/true);
}

}  // namespace ds
