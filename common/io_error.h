// What to do next about a failed file operation, by its reason (errno): the hint that goes with
// "cannot write 'X': No space left on device" and the other I/O errors a user can fix.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>

namespace ds {

inline std::string io_hint(const std::error_code& ec) {
  if (ec.category() != std::generic_category() && ec.category() != std::system_category()) {
    return "check the path and its permissions";
  }
  switch (ec.value()) {
    case ENOSPC:
    case EDQUOT:
      return "free space on that disk (or write to a folder on another one) and run again";
    case EACCES:
    case EPERM:
      return "check the permissions of the file and its folder, or choose another path";
    case EROFS:
      return "that file system is read-only: choose a path on another one";
    case ENOENT:
      return "a folder on the path does not exist: create it first (mkdir -p), or choose another "
             "path";
    case ENOTDIR:
      return "a part of the path is a file, not a folder: choose another path";
    case EISDIR:
      return "the path is a folder: name a file in it";
    case ELOOP:
      return "a symbolic link on the path leads to itself or through too many links: fix or "
             "remove it";
    case ENAMETOOLONG:
      return "the path or one of its names is too long: choose a shorter one";
    case EEXIST:
      return "something is in the way at that path: remove it, or choose another path";
    default:
      return "check the path and its permissions";
  }
}

}  // namespace ds
