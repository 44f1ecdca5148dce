// `driftscope sweep`: a grid of run configurations, one trace each, named by its differing knobs,
// with DIR/sweep.json; run here (-j N at a time) or as a Slurm job array. Resumable: complete
// traces of the same configuration are kept, everything else is run again.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <system_error>

#include "common/error.h"
#include "common/output_file.h"
#include "src/cli/commands.h"
#include "src/cli/run_config_args.h"
#include "src/cli/slurm_args.h"
#include "src/cli/sweep_exec.h"
#include "src/console/output.h"
#include "src/experiment/sweep.h"
#include "src/experiment/trace_recorder.h"
#include "trace/writer.h"

namespace ds {
namespace {

// The layers a --probes list is spelled against before the model is known.
constexpr int kMaxCheckedLayers = 4096;

struct SweepArgs {
  RunConfigArgs run;
  std::string grid;
  std::string prompts;
  std::string model;
  std::string tokenizer;
  std::string output;
  std::string probes;  // --probes of every run; empty: the sweep's own (new sweep: default)
  int jobs = 1;
  int samples = 0;
  bool slurm = false;
  bool wait = false;
  SlurmOptions slurm_opt;
  int poll_s = 5;
  bool quiet = false;
  // passed to each run when given
  std::string compression = trace::compression_name(trace::WriterOptions{}.deflate_level);
};

std::string absolute_or_empty(const std::string& p) {
  return p.empty() ? p : std::filesystem::absolute(p).lexically_normal().string();
}

// The state of a new sweep from the command line; checked against DIR/sweep.json when it exists.
SweepState state_from_args(const SweepArgs& a) {
  SweepState s;
  s.grid = parse_grid(a.grid);
  if (a.samples > 0) add_samples(s.grid, a.samples, a.run.config.seed);
  s.base = a.run.config;
  validate(s.base);
  if (a.prompts.empty()) {
    throw Error("sweep needs a prompts file", "pass --prompts FILE (one prompt per line)");
  }
  if (!std::filesystem::exists(a.prompts)) {
    throw Error(fmt::format("prompts file '{}' does not exist", a.prompts),
                "--prompts takes a file of prompts, e.g. models/prompts.txt");
  }
  if (!std::filesystem::is_regular_file(a.prompts)) {  // each run, and a resume, reads it again
    throw Error(fmt::format("prompts file '{}' is not a regular file", a.prompts),
                "a sweep reads its prompts once per configuration and again on resume: give a "
                "file, not a pipe such as <(...) or /dev/stdin");
  }
  s.prompts = absolute_or_empty(a.prompts);
  s.model = absolute_or_empty(a.model);
  s.tokenizer = absolute_or_empty(a.tokenizer);
  if (!a.probes.empty()) s.probes = a.probes;
  s.entries = expand_grid(s.base, s.grid);
  return s;
}

bool same_sweep(const SweepState& x, const SweepState& y) {
  if (x.prompts != y.prompts || x.model != y.model || x.tokenizer != y.tokenizer ||
      x.probes != y.probes || x.entries.size() != y.entries.size()) {
    return false;
  }
  for (size_t i = 0; i < x.entries.size(); ++i) {
    if (x.entries[i].name != y.entries[i].name ||
        to_json(x.entries[i].config) != to_json(y.entries[i].config)) {
      return false;
    }
  }
  return true;
}

// Sets each entry's status from its trace and returns the indices still to run.
std::vector<size_t> refresh(const std::filesystem::path& dir, SweepState& s, bool submitted) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < s.entries.size(); ++i) {
    auto& e = s.entries[i];
    if (trace_done(entry_trace(dir, e), e.config, s.probes)) {
      e.status = "done";
    } else {
      if (!(submitted && e.status == "submitted")) e.status = "missing";
      todo.push_back(i);
    }
  }
  return todo;
}

std::string names_of(const SweepState& s, const std::vector<size_t>& idx) {
  std::string out;
  for (size_t i : idx) out += fmt::format("{}{}", out.empty() ? "" : ", ", s.entries[i].name);
  return out;
}

// Checks the flags that need no sweep directory, applies --threads and returns the writer flags
// passed to every run (--compression when given), in that order.
std::vector<std::string> check_flags(const CLI::App& cmd, const SweepArgs& a) {
  if (a.output.empty()) throw Error("sweep needs an output directory", "pass -o DIR");
  if (a.jobs < 1) throw Error(fmt::format("-j {} must be >= 1", a.jobs), "-j takes N >= 1");
  apply_threads(a.run);
  // --compression goes to every `driftscope run` of the sweep when given (checked here first).
  // Not part of sweep.json: it does not change the values, and a resumed sweep keeps the traces
  // it finds whatever their compression (trace_done compares the run config only).
  std::vector<std::string> writer_flags;
  if (cmd.get_option("--compression")->count() > 0) {
    writer_flags = {"--compression",
                    trace::compression_name(trace::parse_compression(a.compression))};
  }
  check_slurm_flags(a.slurm, a.slurm_opt, a.poll_s, a.output);
  if (a.samples < 0) {
    throw Error(fmt::format("--samples {} must be >= 1", a.samples),
                "--samples K runs K seeds per configuration; leave it out for one");
  }
  // the spelling only: a list naming a layer the model lacks is refused by each run
  if (!a.probes.empty()) resolve_probes(a.probes, kMaxCheckedLayers);
  return writer_flags;
}

// The sweep to run: a new one from --grid (which must match DIR/sweep.json when it exists, whose
// statuses and Slurm jobs it takes), or the one recorded in DIR when --grid is left out.
SweepState sweep_to_run(const SweepArgs& a, const std::filesystem::path& dir) {
  const bool exists = std::filesystem::exists(sweep_json_path(dir));
  SweepState s;
  if (!a.grid.empty()) {
    s = state_from_args(a);
    if (exists) {
      SweepState old = read_sweep_state(dir);
      if (!same_sweep(old, s)) {
        throw Error(fmt::format("'{}' holds another sweep (other grid, base config, model, "
                                "prompts or probes)",
                                dir.string()),
                    "choose another -o directory, or leave out --grid to resume the one there");
      }
      s.slurm_jobs = old.slurm_jobs;
      for (size_t i = 0; i < s.entries.size(); ++i) s.entries[i].status = old.entries[i].status;
    }
  } else if (exists) {
    s = read_sweep_state(dir);
    if (!a.probes.empty() && a.probes != s.probes) {
      throw Error(
          fmt::format("'{}' holds a sweep recorded with --probes {}", dir.string(), s.probes),
          "leave out --probes to resume it, or choose another -o directory");
    }
  } else {
    throw Error("sweep needs --grid", "e.g. --grid 'dtype=bf16,fp16,fp32 batch=1,8'");
  }
  return s;
}

// Writes each configuration as TOML to DIR/configs/, where its run reads it.
void write_entry_configs(const std::filesystem::path& dir, const SweepState& s) {
  std::filesystem::create_directories(dir / "configs");
  for (const auto& e : s.entries) {
    write_file_or_fail(entry_config(dir, e), to_toml(e.config),  // never through a link
                       "check that -o names a writable folder and the disk is not full");
  }
}

// With --wait: waits for every Slurm job of the sweep to leave the queue. With --slurm alone:
// refuses to submit again while one of them is queued or running.
void settle_earlier_jobs(const SweepArgs& a, const SweepState& s) {
  settle_slurm_jobs(s.slurm_jobs, "sweep", a.wait, a.slurm, a.poll_s, a.quiet,
                    "wait for it (driftscope sweep -o DIR --wait) before resubmitting");
}

// Records the sweep's state; exit 1 naming the configurations still missing, else 0.
int finish(const std::filesystem::path& dir, const SweepState& s, const std::vector<size_t>& todo,
           bool quiet) {
  write_sweep_state(dir, s);
  if (!todo.empty()) {
    print_note("driftscope: {} of {} configurations missing: {}\n", todo.size(), s.entries.size(),
               names_of(s, todo));
    return 1;
  }
  if (!quiet) {
    print_note("sweep: all {} configurations complete in {}\n", s.entries.size(), dir.string());
  }
  return 0;
}

int run_sweep(const CLI::App& cmd, const SweepArgs& a) {
  const std::vector<std::string> writer_flags = check_flags(cmd, a);
  const std::filesystem::path dir = a.output;
  SweepState s = sweep_to_run(a, dir);
  if (a.run.dry_run) {
    for (const auto& e : s.entries) fmt::print("# {}\n{}\n", e.name, to_toml(e.config));
    return 0;
  }
  std::filesystem::create_directories(dir);
  const SweepLock lock(dir);  // one sweep at a time in DIR, from here to the end
  write_entry_configs(dir, s);
  settle_earlier_jobs(a, s);
  std::vector<size_t> todo = refresh(dir, s, /*submitted=*/false);
  const size_t kept = s.entries.size() - todo.size();
  write_sweep_state(dir, s);  // before the first run: a killed sweep can be resumed

  if (a.slurm) {
    if (!todo.empty()) {
      const std::string job = submit_slurm(dir, s, todo, a.slurm_opt, writer_flags);
      s.slurm_jobs.push_back(job);
      for (size_t i : todo) s.entries[i].status = "submitted";
      write_sweep_state(dir, s);
      if (!a.quiet) {
        print_note("sweep: submitted Slurm job array {} ({} configurations; {} kept)\n", job,
                   todo.size(), kept);
      }
      if (a.wait) {
        wait_while_active(job, a.poll_s);
        todo = refresh(dir, s, false);
      } else {
        return 0;
      }
    }
  } else if (!a.wait && !todo.empty()) {
    if (!a.quiet && kept > 0) print_note("sweep: kept {} complete trace(s)\n", kept);
    const bool interrupted = run_local(dir, s, todo, a.jobs, a.quiet, writer_flags);
    todo = refresh(dir, s, false);
    if (interrupted) {
      write_sweep_state(dir, s);
      print_note("sweep: interrupted; resume with driftscope sweep -o {}\n", dir.string());
      return 130;
    }
  }
  return finish(dir, s, todo, a.quiet);
}

}  // namespace

CommandRun register_sweep(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Run every configuration of a grid over a base run config, one trace each, named by the "
      "knobs that vary (DIR/dtype-bf16_batch-8.h5), with the grid, base config and each "
      "configuration's status in DIR/sweep.json. Resumable: complete traces of the same "
      "configuration are kept, the rest run again. Locally (-j N at a time) or as a Slurm job "
      "array (--slurm). Exit 1 when a configuration is missing at the end.");
  add_run_config_options(*cmd, args->run);
  cmd->get_option("--dry-run")
      ->description(
          "print every configuration of the grid (its name, then its resolved config as TOML) and "
          "exit");
  cmd->add_option("--grid", args->grid,
                  "knobs and their values, e.g. 'dtype=bf16,fp16,fp32 batch=1,8,32 tp=1,2,4' "
                  "(run-config fields), or @FILE (configs/grid-seeds-12.txt); may be left out to "
                  "resume or wait for the sweep in DIR");
  cmd->add_option("--prompts", args->prompts, "file of prompts (as for run); required with --grid");
  cmd->add_option("--model", args->model,
                  "Hugging Face model directory or llama2.c .bin (default: bundled kjv-llama)");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "tokenizer file (default: found beside the model)");
  cmd->add_option("-o,--output", args->output, "sweep directory; required");
  cmd->add_option("-j,--jobs", args->jobs, "configurations run at once on this machine")
      ->capture_default_str();
  add_compression_option(*cmd, args->compression);
  cmd->add_option("--probes", args->probes,
                  "hidden sites every run records, as for run: default, all, none (tokens, "
                  "top-K logits and log-sum-exp only: the cheap first pass before zoom), or a "
                  "list like embed,L*/out; kept in sweep.json (default: default)");
  cmd->add_option("--samples", args->samples,
                  "K sampled runs per configuration, with seeds --seed .. --seed+K-1 (use with "
                  "--temperature > 0)");
  add_slurm_options(*cmd, args->slurm, args->slurm_opt, args->wait, args->poll_s,
                    "write DIR/sweep.sbatch (one array task per configuration still missing, "
                    "each a `driftscope run`) and submit it with sbatch",
                    "wait until the sweep's Slurm jobs have left the queue, then record which "
                    "configurations are complete (with --slurm: after submitting)");
  cmd->add_flag("-q,--quiet", args->quiet, "no progress lines on stderr");
  return [args, cmd] {
    apply_config_file(*cmd, args->run);
    return run_sweep(*cmd, *args);
  };
}

}  // namespace ds
