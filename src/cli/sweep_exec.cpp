// Running a sweep's configurations: a local process pool, or a Slurm job array.
#include "src/cli/sweep_exec.h"

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
#include <cstdio>
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

std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command, returning its stdout and exit status.
std::string capture(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) throw Error(fmt::format("cannot run '{}'", cmd));
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  return out;
}

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

SweepLock::SweepLock(const std::filesystem::path& dir, const std::string& what) {
  const std::filesystem::path path = dir / ".sweep.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw Error(fmt::format("cannot open '{}': {}", path.string(), std::strerror(errno)),
                "check that -o names a writable folder");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    [[maybe_unused]] const ssize_t n = ::pread(fd_, pid, sizeof(pid) - 1, 0);
    ::close(fd_);
    fd_ = -1;
    throw Error(fmt::format("a {} is running in '{}' (pid {})", what, dir.string(),
                            std::string(pid).substr(0, std::string(pid).find('\n'))),
                fmt::format("wait for it to end, or give this {} another -o folder", what));
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) < 0) {
    // the lock holds without the pid; only the message of a second sweep is poorer
  }
}

SweepLock::~SweepLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::string> run_argv(const std::filesystem::path& dir, const SweepState& s,
                                  const SweepEntry& e,
                                  const std::vector<std::string>& writer_flags) {
  std::vector<std::string> argv = {self_exe().string(),           "run",       "--config",
                                   entry_config(dir, e).string(), "--prompts", s.prompts};
  if (!s.model.empty()) argv.insert(argv.end(), {"--model", s.model});
  if (!s.tokenizer.empty()) argv.insert(argv.end(), {"--tokenizer", s.tokenizer});
  argv.insert(argv.end(),
              {"--probes", s.probes, "-o", entry_trace(dir, e).string(), "--force", "-q"});
  argv.insert(argv.end(), writer_flags.begin(), writer_flags.end());
  return argv;
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

bool run_local(const std::filesystem::path& dir, SweepState& s, const std::vector<size_t>& todo,
               int jobs, bool quiet, const std::vector<std::string>& writer_flags) {
  std::vector<ChildRun> runs;
  for (size_t i : todo) {
    runs.push_back({s.entries[i].name, run_argv(dir, s, s.entries[i], writer_flags)});
  }
  return run_children(dir, runs, jobs, quiet, "sweep", [&](size_t i, bool exited_ok) {
    SweepEntry& e = s.entries[todo[i]];
    const bool ok = exited_ok && trace_done(entry_trace(dir, e), e.config, s.probes);
    e.status = ok ? "done" : "missing";
    write_sweep_state(dir, s);  // progress survives an interruption
    return ok;
  });
}

void check_slurm_text(const SlurmOptions& opt, const std::filesystem::path& dir) {
  auto check = [](const std::string& what, const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x20 || c == 0x7f) {
        throw Error(fmt::format("{} holds a control character (byte 0x{:02x} at offset {}), which "
                                "would end a line of the Slurm batch script",
                                what, c, i),
                    "give it without newlines or other control characters");
      }
    }
  };
  check("--partition", opt.partition);
  check("--time", opt.time);
  check("the sweep folder (-o)", std::filesystem::absolute(dir).string());
}

void check_slurm_flags(bool slurm, const SlurmOptions& opt, int poll_s,
                       const std::filesystem::path& dir) {
  if (poll_s < 1) {
    throw Error(fmt::format("--poll {} must be >= 1", poll_s),
                "--poll takes the seconds between squeue polls, N >= 1");
  }
  if (opt.gpus_per_task < 0) {
    throw Error(fmt::format("--gpus-per-task {} is negative", opt.gpus_per_task),
                "--gpus-per-task takes N >= 0 (0: no GPU request)");
  }
  if (!slurm && (!opt.partition.empty() || opt.gpus_per_task != 0 || !opt.time.empty())) {
    throw Error("--partition, --gpus-per-task and --time go with --slurm", "add --slurm");
  }
  if (slurm) check_slurm_text(opt, dir);
}

std::string submit_slurm_array(const std::filesystem::path& dir, const std::string& script_name,
                               const std::string& job_name, const std::vector<ChildRun>& runs,
                               const std::vector<size_t>& todo, const SlurmOptions& opt) {
  std::filesystem::create_directories(dir / "logs");
  const auto abs = std::filesystem::absolute(dir);
  std::string indices;
  for (size_t i : todo) indices += fmt::format("{}{}", indices.empty() ? "" : ",", i);
  std::string script = "#!/bin/bash\n";
  script += fmt::format("# {}: one array task per run, each the command line below.\n", job_name);
  script += fmt::format("#SBATCH --job-name={}\n", job_name);
  script += fmt::format("#SBATCH --array={}\n", indices);
  script += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n";
  script += fmt::format("#SBATCH --output={}/logs/slurm-%A_%a.log\n", abs.string());
  if (!opt.partition.empty()) script += fmt::format("#SBATCH --partition={}\n", opt.partition);
  if (opt.gpus_per_task > 0)
    script += fmt::format("#SBATCH --gpus-per-task={}\n", opt.gpus_per_task);
  if (!opt.time.empty()) script += fmt::format("#SBATCH --time={}\n", opt.time);
  script += "set -euo pipefail\ncase \"$SLURM_ARRAY_TASK_ID\" in\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string cmd;
    for (const auto& a : runs[i].argv) {
      cmd += fmt::format("{}{}", cmd.empty() ? "" : " ", sh_quote(a));
    }
    script += fmt::format("  {}) exec {} ;;\n", i, cmd);
  }
  script += "  *) echo \"no run $SLURM_ARRAY_TASK_ID\" >&2; exit 2 ;;\nesac\n";
  const auto path = abs / script_name;
  write_file_or_fail(path, script);
  int status = 0;
  std::string out =
      capture(fmt::format("sbatch --parsable {} 2>&1", sh_quote(path.string())), status);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (status != 0) {
    throw Error(
        fmt::format("sbatch failed (exit {}): {}", status, out),
        "is Slurm reachable from here? (sinfo; SLURM_CONF); the script is " + path.string());
  }
  const auto semi = out.find(';');  // "jobid;cluster" on multi-cluster setups
  return semi == std::string::npos ? out : out.substr(0, semi);
}

std::string submit_slurm(const std::filesystem::path& dir, const SweepState& s,
                         const std::vector<size_t>& todo, const SlurmOptions& opt,
                         const std::vector<std::string>& writer_flags) {
  const auto abs = std::filesystem::absolute(dir);
  std::vector<ChildRun> runs;
  for (const auto& e : s.entries) runs.push_back({e.name, run_argv(abs, s, e, writer_flags)});
  return submit_slurm_array(dir, "sweep.sbatch", "driftscope-sweep", runs, todo, opt);
}

bool slurm_job_active(const std::string& job_id) {
  int status = 0;
  const std::string out =
      capture(fmt::format("squeue -h -j {} -o %i 2>/dev/null", sh_quote(job_id)), status);
  return status == 0 && out.find_first_not_of(" \n") != std::string::npos;
}

void wait_while_active(const std::string& job_id, int poll_s) {
  while (slurm_job_active(job_id)) std::this_thread::sleep_for(std::chrono::seconds(poll_s));
}

void settle_slurm_jobs(const std::vector<std::string>& jobs, const char* what, bool wait,
                       bool refuse, int poll_s, bool quiet, const std::string& hint) {
  for (const auto& job : jobs) {
    if (wait) {
      if (!quiet) print_note("{}: waiting for Slurm job {}\n", what, job);
      wait_while_active(job, poll_s);
    } else if (refuse && slurm_job_active(job)) {
      throw Error(fmt::format("Slurm job {} of this {} is still queued or running", job, what),
                  hint);
    }
  }
}

}  // namespace ds
