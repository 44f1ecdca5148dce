// Report files written whole or not at all, never over an input.
#include "src/cli/report_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace ds {

void check_report_output(const std::string& path, const std::vector<std::filesystem::path>& inputs,
                         const std::string& option) {
  if (path.empty() || path == "-") return;
  struct stat out {};
  if (::stat(path.c_str(), &out) != 0) return;  // a new file
  if (!S_ISREG(out.st_mode)) {
    throw Error(fmt::format("{} '{}' is not a regular file", option, path),
                fmt::format("give {} the path of a new or existing report file", option));
  }
  for (const auto& in : inputs) {
    struct stat st {};
    if (::stat(in.c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino) {
      throw Error(fmt::format("{} '{}' is the input '{}': the report would overwrite it", option,
                              path, in.string()),
                  fmt::format("give {} another file name", option));
    }
  }
}

void write_report_file(const std::string& text, const std::string& path, const std::string& what,
                       const std::string& hint) {
  const std::filesystem::path target(path);
  const std::filesystem::path folder =
      target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path();
  std::string tmp = (folder / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);  // O_EXCL, a name no one else has
  const auto fail = [&](int err) {
    return Error(fmt::format("cannot write the {} to '{}': {}", what, path, std::strerror(err)),
                 hint);
  };
  if (fd < 0) throw fail(errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw fail(err);
    }
    done += static_cast<size_t>(n);
  }
  const mode_t mask = ::umask(0);  // mkostemp made it 0600; a report gets what any file would
  ::umask(mask);
  const bool chmod_ok = ::fchmod(fd, 0666 & ~mask) == 0;
  const int chmod_err = errno;
  if (::close(fd) != 0 || !chmod_ok) {
    const int err = chmod_ok ? errno : chmod_err;
    ::unlink(tmp.c_str());
    throw fail(err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw fail(err);
  }
}

}  // namespace ds
