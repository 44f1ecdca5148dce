// Running a sweep: its state from the command line or DIR/sweep.json, its configurations run here
// or submitted to Slurm, and what is complete at the end.
#include "src/workflow/sweep.h"

#include <fmt/format.h>

#include <filesystem>

#include "common/error.h"
#include "common/output_file.h"
#include "src/console/output.h"
#include "src/experiment/prompts.h"
#include "src/experiment/trace_recorder.h"
#include "src/model/model.h"
#include "src/tokenizer/load.h"
#include "src/workflow/child_runs.h"
#include "src/workflow/command_files.h"
#include "src/workflow/sweep_plan.h"

namespace ds {
namespace {

// The `driftscope run` command line of one configuration (argv, the executable first), with
// `writer_flags` (options of the trace writer, such as --compression NAME) at the end.
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

// Runs the entries at `todo` (indices into s.entries), `jobs` at a time (each with --threads the
// CPU threads / jobs), each with its stdout and stderr in DIR/logs/<name>.log; sets each one's
// status to done or missing. Prints one line per finished configuration on stderr unless `quiet`.
// Signals as run_children; returns true when interrupted.
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

// Writes DIR/sweep.sbatch (one array task per entry at `todo`, index = its position in
// sweep.json) and submits it with `sbatch --parsable`; returns the job id.
std::string submit_slurm(const std::filesystem::path& dir, const SweepState& s,
                         const std::vector<size_t>& todo, const SlurmOptions& opt,
                         const std::vector<std::string>& writer_flags) {
  const auto abs = std::filesystem::absolute(dir);
  std::vector<ChildRun> runs;
  for (const auto& e : s.entries) runs.push_back({e.name, run_argv(abs, s, e, writer_flags)});
  return submit_slurm_array(dir, "sweep.sbatch", "driftscope-sweep", runs, todo, opt);
}

std::string absolute_or_empty(const std::string& p) {
  return p.empty() ? p : std::filesystem::absolute(p).lexically_normal().string();
}

// The state of a new sweep from the command line; checked against DIR/sweep.json when it exists.
SweepState state_from_args(const SweepOptions& a) {
  SweepState s;
  s.grid = parse_grid(a.grid, a.option_of);
  if (a.samples > 0) add_samples(s.grid, a.samples, a.base.seed);
  s.base = a.base;
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

// The sweep to run: a new one from --grid (which must match DIR/sweep.json when it exists, whose
// statuses and Slurm jobs it takes), or the one recorded in DIR when --grid is left out.
SweepState sweep_to_run(const SweepOptions& a, const std::filesystem::path& dir) {
  if (!a.dry_run) check_workflow_folder(dir, "sweep", "sweep.json");
  const bool exists =
      std::filesystem::exists(std::filesystem::symlink_status(sweep_json_path(dir)));
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

// What each run of the sweep would refuse about the prompts, known now: the prompts file read
// with the tokenizer the runs load (a text prompt needs one, no prompt may pass the context) and
// every configuration's add_bos applied to them. Reads the model's config and tokenizer, not its
// weights.
void check_prompts(const SweepState& s, const std::filesystem::path& model, const ModelConfig& m) {
  const ModelFormat format = model_format(model);
  const std::filesystem::path folder =
      format == ModelFormat::HuggingFace && !std::filesystem::is_directory(model)
          ? model.parent_path()
          : model;
  std::unique_ptr<Tokenizer> tok;
  std::optional<Error> why_none;  // a tokenizer found but damaged: the cause to give
  std::filesystem::path path = s.tokenizer;
  if (path.empty()) {
    try {
      path = find_tokenizer(folder, format);
    } catch (const Error&) {  // none beside the model: a text prompt says it needs one
    }
  }
  if (!path.empty()) {
    try {
      tok = load_tokenizer(path, m.vocab_size);
    } catch (const Error& e) {
      if (!s.tokenizer.empty()) throw;  // given, so every run loads it
      why_none = e;
    }
  }
  const std::vector<Prompt> prompts =
      read_prompts_file(s.prompts, tok.get(), true, m.max_seq_len, why_none);
  std::optional<int32_t> bos = tok && tok->bos_id() ? tok->bos_id() : m.bos_id;
  for (const auto& e : s.entries) {
    std::vector<Prompt> copy = prompts;
    try {
      apply_add_bos(copy, e.config.add_bos, bos);
    } catch (const Error& err) {
      throw Error(fmt::format("configuration {}: {}", e.name, err.what()), err.hint());
    }
  }
}

// The checks a sweep makes before anything of it is written: every configuration fits the model
// (tp against its heads, the stop token against its vocabulary) and its prompts, so that no run
// of the grid fails on what can be known now; and no file the sweep writes is one it reads (its
// prompts, model, config or grid file). Its folder was checked first (check_workflow_folder).
void check_before_writing(const SweepOptions& a, const std::filesystem::path& dir,
                          const SweepState& s) {
  const std::filesystem::path model =
      s.model.empty() ? default_model_path() : std::filesystem::path(s.model);
  const ModelConfig m = read_model_config(model);
  for (const auto& e : s.entries) {
    try {
      validate_for_model(e.config, m);
    } catch (const Error& err) {
      throw Error(fmt::format("configuration {}: {}", e.name, err.what()),
                  err.hint() +
                      " (every configuration of the grid is checked against the model "
                      "before anything runs)");
    }
  }
  if (!s.probes.empty()) resolve_probes(s.probes, m.n_layers);  // a layer the model lacks
  check_prompts(s, model, m);
  CommandFiles files;
  files.model_inputs(s.model, s.tokenizer);
  files.input(s.prompts, "the prompts file");
  files.input(a.config_file, "the config file");
  if (a.grid.starts_with('@')) files.input(a.grid.substr(1), "the grid file");
  const auto own = [&](const std::filesystem::path& p, const std::string& what) {
    files.output(p, what, "-o", /*may_replace=*/true);  // DIR is new or this sweep's
  };
  own(sweep_json_path(dir), "sweep file");
  own(dir / "sweep.sbatch", "batch script");
  for (const auto& e : s.entries) {
    own(entry_config(dir, e), "configuration file");
    own(entry_trace(dir, e), "trace");
    own(dir / "logs" / (e.name + ".log"), "log");
  }
  files.check();
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
void settle_earlier_jobs(const SweepOptions& a, const SweepState& s) {
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

}  // namespace

int run_sweep(const SweepOptions& a) {
  const std::filesystem::path dir = a.output;
  SweepState s = sweep_to_run(a, dir);
  if (a.dry_run) {
    for (const auto& e : s.entries) fmt::print("# {}\n{}\n", e.name, to_toml(e.config));
    return 0;
  }
  check_before_writing(a, dir, s);
  // everything above reads and checks; from here on DIR is written
  std::filesystem::create_directories(dir);
  const SweepLock lock(dir);  // one sweep at a time in DIR, from here to the end
  write_sweep_state(dir, s);  // first: an interrupted sweep leaves a folder it can resume
  write_entry_configs(dir, s);
  settle_earlier_jobs(a, s);
  std::vector<size_t> todo = refresh(dir, s, /*submitted=*/false);
  const size_t kept = s.entries.size() - todo.size();
  write_sweep_state(dir, s);  // before the first run: a killed sweep can be resumed

  if (a.slurm) {
    if (!todo.empty()) {
      const std::string job = submit_slurm(dir, s, todo, a.slurm_opt, a.writer_flags);
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
    const bool interrupted = run_local(dir, s, todo, a.jobs, a.quiet, a.writer_flags);
    todo = refresh(dir, s, false);
    if (interrupted) {
      write_sweep_state(dir, s);
      print_note("sweep: interrupted; resume with driftscope sweep -o {}\n", dir.string());
      return 130;
    }
  }
  return finish(dir, s, todo, a.quiet);
}

}  // namespace ds
