// Output files that never damage what exists (docs/cli.md, "Output files"): a new file is made
// under a unique hidden name beside its target, created exclusively (never an existing file,
// never through a link), and moved onto the target only when complete; without permission to
// replace, a target that appeared meanwhile is kept and the move fails; nothing that is not a
// regular file, and no trace a writer still holds locked, is ever replaced. Used by the trace
// writer, the report files and the sweep's own files.
#pragma once

#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "common/error.h"
#include "common/io_error.h"

namespace ds {

// Whether `path` (a link followed) is a file whose writer holds its advisory lock (flock, taken
// by the trace writer for its whole run; HDF5 takes the same kind): a shared lock cannot be had
// at once. Opened without blocking, so a FIFO cannot hang it.
inline bool held_by_writer(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

// What stands at a target path, for the checks before writing it.
enum class TargetState { absent, regular, held, other };  // held: a regular file being written

inline TargetState target_state(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return TargetState::absent;
  if (!S_ISREG(st.st_mode)) return TargetState::other;  // a link, folder, device, FIFO, socket
  return held_by_writer(path) ? TargetState::held : TargetState::regular;
}

// The hidden ".creating" files this process is writing now, so that a signal that ends it
// (Ctrl-C, SIGTERM, SIGHUP, a second Ctrl-C that aborts) removes them instead of leaving hidden
// files that block the next command (docs/cli.md, "Files, safety and limits"). remove_all() is
// async-signal-safe: it only reads fixed slots and calls unlink(2).
class CreatingFiles {
 public:
  static constexpr int kSlots = 64;
  static constexpr size_t kPathBytes = 4096;
  // Remembers `path` (a file too long for a slot, or one past the slots, is not remembered).
  static int add(const std::string& path) {
    if (path.size() >= kPathBytes) return -1;
    for (int i = 0; i < kSlots; ++i) {
      bool expected = false;
      if (used()[i].compare_exchange_strong(expected, true)) {
        std::memcpy(paths()[i], path.c_str(), path.size() + 1);
        ready()[i].store(true, std::memory_order_release);
        return i;
      }
    }
    return -1;
  }
  static void remove(int slot) {
    if (slot < 0) return;
    ready()[slot].store(false, std::memory_order_release);
    used()[slot].store(false, std::memory_order_release);
  }
  // Unlinks every file remembered (in a signal handler).
  static void remove_all() noexcept {
    for (int i = 0; i < kSlots; ++i) {
      if (ready()[i].load(std::memory_order_acquire)) ::unlink(paths()[i]);
    }
  }

 private:
  static std::atomic<bool>* used() {
    static std::atomic<bool> u[kSlots];
    return u;
  }
  static std::atomic<bool>* ready() {
    static std::atomic<bool> r[kSlots];
    return r;
  }
  static char (*paths())[kPathBytes] {
    static char p[kSlots][kPathBytes];
    return p;
  }
};

// A file being written under a unique hidden name ".<target name>.XXXXXX.creating" in the
// target's folder, created with O_EXCL (so neither someone else's file nor a link planted at
// that name) and mode 0666 & ~umask, as any new file. Removed on destruction unless committed.
// Errors are std::system_error with the errno; callers say what was being written.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& target) {
    const std::filesystem::path folder =
        target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path();
    std::string leaf = ".";  // appended piece by piece: GCC 12 warns falsely on "." + string
    leaf += target.filename().string();
    leaf += ".XXXXXX";
    leaf += kSuffix;
    std::string name = (folder / leaf).string();
    fd_ = ::mkostemps(name.data(), static_cast<int>(std::string_view(kSuffix).size()), O_CLOEXEC);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category());
    path_ = name;
    // absolute: a handler's unlink must not depend on the working folder
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(path_, ec);
    slot_ = CreatingFiles::add(ec ? path_.string() : abs.string());
    const mode_t mask = ::umask(0);  // mkostemps made it 0600
    ::umask(mask);
    if (::fchmod(fd_, 0666 & ~mask) != 0) fail(errno);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
    CreatingFiles::remove(slot_);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Appends `data` (a full disk: ENOSPC).
  void write(std::string_view data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(n < 0 ? errno : ENOSPC);
      done += static_cast<size_t>(n);
    }
  }

  // Closes the descriptor (the file stays, for a library to open by its path).
  void close() {
    if (fd_ >= 0 && ::close(std::exchange(fd_, -1)) != 0) fail(errno);
  }

  // Moves the file onto `target` (closing it first). Without `replace`, an existing target is
  // kept and this fails with EEXIST, also when it appeared after any earlier check.
  void commit(const std::filesystem::path& target, bool replace) {
    close();
    move_onto(path_, target, replace);
    path_.clear();
    CreatingFiles::remove(std::exchange(slot_, -1));
  }

  // Moves `from` onto `to`, atomically; without `replace` never over an existing `to` (EEXIST).
  static void move_onto(const std::filesystem::path& from, const std::filesystem::path& to,
                        bool replace) {
    if (replace) {
      if (::rename(from.c_str(), to.c_str()) != 0) throw_errno(errno);
      return;
    }
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return;
    if (errno != EINVAL && errno != ENOSYS) throw_errno(errno);
    // A file system without RENAME_NOREPLACE: link() never replaces either.
    if (::link(from.c_str(), to.c_str()) != 0) throw_errno(errno);
    ::unlink(from.c_str());
  }

 private:
  static constexpr const char* kSuffix = ".creating";
  [[noreturn]] static void throw_errno(int err) {
    throw std::system_error(err, std::generic_category());
  }
  [[noreturn]] void fail(int err) {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    ::unlink(path_.c_str());
    path_.clear();
    CreatingFiles::remove(std::exchange(slot_, -1));
    throw_errno(err);
  }
  int fd_ = -1;
  int slot_ = -1;  // in CreatingFiles
  std::filesystem::path path_;
};

// The entries of `dir` as a refusal names them: "a.h5, notes.txt and 3 more", hidden ones
// included and said to be hidden ("'.x.creating' (hidden: ls -A shows it)"), so that a message
// never cites a file `ls` does not show. `skip`: a name left out (a lock file of the caller's).
// Empty when there is none.
inline std::string folder_entries_text(const std::filesystem::path& dir,
                                       const std::string& skip = {}) {
  std::error_code ec;
  std::string out;
  size_t count = 0, hidden = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == skip) continue;
    hidden += name.starts_with('.');
    if (++count <= 3) out += (out.empty() ? "" : ", ") + name;
  }
  if (count > 3) out += " and " + std::to_string(count - 3) + " more";
  if (hidden > 0)
    out += hidden == 1 ? " (one hidden: ls -A shows it)" : " (hidden ones: ls -A shows them)";
  return out;
}

// Writes `text` to `target` whole or not at all (a TempFile committed with `replace`).
inline void write_file_whole(const std::filesystem::path& target, std::string_view text,
                             bool replace = true) {
  TempFile f(target);
  f.write(text);
  f.commit(target, replace);
}

// A failed write of `target` as ds::Error "cannot write '<target>': <reason>" with `hint` (by
// default, what to do about that reason: io_hint).
inline Error write_error(const std::filesystem::path& target, const std::system_error& e,
                         const std::string& hint = {}) {
  return Error("cannot write '" + target.string() + "': " + e.code().message(),
               hint.empty() ? io_hint(e.code()) : hint);
}

// write_file_whole, a failure thrown as write_error.
inline void write_file_or_fail(const std::filesystem::path& target, std::string_view text,
                               const std::string& hint = {}) {
  try {
    write_file_whole(target, text);
  } catch (const std::system_error& e) {
    throw write_error(target, e, hint);
  }
}

}  // namespace ds
