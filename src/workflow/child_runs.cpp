// Runs as child processes of this machine, -j at a time, and the folder lock.
#include "src/workflow/child_runs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <thread>

#include "common/error.h"
#include "common/output_file.h"
#include "kernels/cpu/cpu_exec.h"
#include "src/console/interrupt.h"
#include "src/console/output.h"

namespace ds {
namespace {

pid_t spawn(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  const pid_t parent = ::getpid();
  const pid_t pid = fork();
  if (pid < 0) throw Error("fork failed: cannot start a configuration's run");
  if (pid == 0) {
    // Its own process group: a Ctrl-C at the terminal reaches the sweep alone, which forwards it
    // once (a second SIGINT would abort the run). A sweep that dies (even of SIGKILL) ends its
    // runs with SIGTERM, which each answers by finishing its trace.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) _exit(130);  // the sweep died before prctl took effect
    // a fresh file: whatever was at the log's name (an old log, a planted link) is unlinked,
    // never written through
    ::unlink(log.c_str());
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

std::filesystem::path self_exe() {
  return std::filesystem::read_symlink("/proc/self/exe");
}

namespace {

constexpr const char* kLockName = ".sweep.lock";

// "a sweep (pid 123)" from a lock file's "123 sweep\n" (a lock of an older version holds the pid
// alone: "a sweep or zoom").
std::string holder_of(int fd) {
  char buf[64] = {};
  [[maybe_unused]] const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  std::string text(buf);
  text = text.substr(0, text.find('\n'));
  const size_t space = text.find(' ');
  const std::string pid = text.substr(0, space);
  const std::string what = space == std::string::npos ? "" : text.substr(space + 1);
  return fmt::format("a {} (pid {})",
                     what == "sweep" || what == "zoom" ? what : std::string("sweep or zoom"), pid);
}

// The error for a folder another sweep or zoom holds, said to `what` wanting it.
Error held_error(const std::filesystem::path& dir, const std::string& holder,
                 const std::string& what) {
  // "a sweep (pid 12)" -> "a sweep is running in 'DIR' (pid 12)"
  const size_t paren = holder.find(" (");
  return Error(fmt::format("{} is running in '{}'{}", holder.substr(0, paren), dir.string(),
                           holder.substr(paren)),
               fmt::format("wait for it to end, or give this {} another -o folder", what));
}

}  // namespace

std::optional<std::string> folder_lock_holder(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kLockName;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) holder = holder_of(fd);
  ::close(fd);
  return holder;
}

void check_workflow_folder(const std::filesystem::path& dir, const std::string& what,
                           const std::string& state_file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (!fs::exists(st)) return;  // a new folder
  if (!fs::is_directory(fs::status(dir, ec))) {
    throw Error(fmt::format("-o '{}' is not a folder", dir.string()),
                fmt::format("{} writes its files into a folder: give -o a new folder", what));
  }
  if (const auto holder = folder_lock_holder(dir)) throw held_error(dir, *holder, what);
  const std::string other = what == "sweep" ? "zoom" : "sweep";
  if (fs::exists(dir / (other + ".json"), ec)) {
    throw Error(
        fmt::format("'{}' holds a {} ({}.json), not a {}", dir.string(), other, other, what),
        fmt::format("give this {} a folder of its own (-o)", what));
  }
  if (fs::exists(fs::symlink_status(dir / state_file, ec))) return;  // resumed: checked by caller
  // the lock an interrupted sweep or zoom left is no file of the user's
  const std::string names = folder_entries_text(dir, kLockName);
  if (names.empty()) return;
  throw Error(fmt::format("'{}' holds files this {} did not write ({}) and no {}", dir.string(),
                          what, names, state_file),
              fmt::format("{} writes into a new or empty folder, or resumes its own (the folder "
                          "of its {}): give -o another folder",
                          what, state_file));
}

SweepLock::SweepLock(const std::filesystem::path& dir, const std::string& what) {
  const std::filesystem::path path = dir / kLockName;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw Error(fmt::format("cannot open '{}': {}", path.string(), std::strerror(errno)),
                "check that -o names a writable folder");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const std::string holder = holder_of(fd_);
    ::close(fd_);
    fd_ = -1;
    throw held_error(dir, holder, what);
  }
  const std::string me = std::to_string(::getpid()) + " " + what + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) < 0) {
    // the lock holds without the pid; only the message of a second sweep is poorer
  }
}

SweepLock::~SweepLock() {
  if (fd_ >= 0) ::close(fd_);
}

bool run_children(const std::filesystem::path& dir, const std::vector<ChildRun>& runs, int jobs,
                  bool quiet, const std::string& label,
                  const std::function<bool(size_t, bool)>& finished) {
  std::filesystem::create_directories(dir / "logs");
  install_interrupt_handlers("stopping the runs, each finishing its trace");
  std::map<pid_t, std::pair<size_t, std::chrono::steady_clock::time_point>> running;
  size_t next = 0, done = 0;
  bool forwarded = false;
  while (next < runs.size() || !running.empty()) {
    if (interrupt_requested() && !forwarded) {  // once: the runs end as `run` does on Ctrl-C
      for (const auto& [pid, entry] : running) ::kill(pid, SIGTERM);
      forwarded = true;
    }
    while (!interrupt_requested() && next < runs.size() &&
           static_cast<int>(running.size()) < jobs) {
      // the CPU threads (--threads, else every core) shared among the runs going at once
      std::vector<std::string> argv = runs[next].argv;
      if (!runs[next].sets_threads) {
        argv.insert(argv.end(),
                    {"--threads", std::to_string(std::max(1, ops::cpu_threads() / jobs))});
      }
      const pid_t pid = spawn(argv, dir / "logs" / (runs[next].name + ".log"));
      running[pid] = {next, std::chrono::steady_clock::now()};
      ++next;
    }
    if (running.empty()) break;  // interrupted before the rest started
    int status = 0;
    // polled, so that a signal between the check above and the wait is seen within 100 ms
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (pid < 0) break;
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const size_t i = it->second.first;
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.second).count();
    const bool ok = finished(i, WIFEXITED(status) && WEXITSTATUS(status) == 0);
    running.erase(it);
    ++done;
    if (!quiet) {
      const std::string& name = runs[i].name;
      print_note("{}: [{}/{}] {} {} ({:.1f} s){}\n", label, done, runs.size(), name,
                 ok          ? "done"
                 : forwarded ? "interrupted"
                             : "FAILED",
                 secs,
                 ok ? "" : fmt::format(" — see {}", (dir / "logs" / (name + ".log")).string()));
    }
  }
  return interrupt_requested();
}

}  // namespace ds
