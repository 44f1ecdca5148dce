// The Slurm back end: a job array's batch script, sbatch and squeue.
#include "src/workflow/slurm.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/error.h"
#include "common/output_file.h"
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
  if (p == nullptr) {
    throw Error(fmt::format("cannot run '{}'", cmd), "check that Slurm's commands are on PATH");
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  return out;
}

}  // namespace

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
