// `driftscope sweep`: its options and their checks; the sweep itself is src/workflow/sweep.h.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "src/cli/commands.h"
#include "src/cli/run_config_args.h"
#include "src/cli/slurm_args.h"
#include "src/experiment/trace_recorder.h"
#include "src/workflow/sweep.h"
#include "trace/writer.h"

namespace ds {
namespace {

// The layers a --probes list is spelled against before the model is known.
constexpr int kMaxCheckedLayers = 4096;

struct SweepArgs {
  RunConfigArgs run;
  SweepOptions sweep;
  // passed to each run when given
  std::string compression = trace::compression_name(trace::WriterOptions{}.deflate_level);
  bool certify = false;  // every run: run --certify
};

// Checks the flags that need no sweep directory, applies --threads and returns the writer flags
// passed to every run (--compression when given), in that order.
std::vector<std::string> check_flags(const CLI::App& cmd, const SweepArgs& a) {
  if (a.sweep.output.empty()) throw Error("sweep needs an output directory", "pass -o DIR");
  if (a.sweep.jobs < 1)
    throw Error(fmt::format("-j {} must be >= 1", a.sweep.jobs), "-j takes N >= 1");
  apply_threads(a.run);
  // --compression goes to every `driftscope run` of the sweep when given (checked here first).
  // Not part of sweep.json: it does not change the values, and a resumed sweep keeps the traces
  // it finds whatever their compression (trace_done compares the run config only).
  std::vector<std::string> writer_flags;
  if (cmd.get_option("--compression")->count() > 0) {
    writer_flags = {"--compression",
                    trace::compression_name(trace::parse_compression(a.compression))};
  }
  // --certify likewise (a resumed sweep keeps its complete traces, certified or not)
  if (a.certify) writer_flags.push_back("--certify");
  check_slurm_flags(a.sweep.slurm, a.sweep.slurm_opt, a.sweep.poll_s, a.sweep.output);
  if (a.sweep.samples < 0) {
    throw Error(fmt::format("--samples {} must be >= 1", a.sweep.samples),
                "--samples K runs K seeds per configuration; leave it out for one");
  }
  // the spelling only: a list naming a layer the model lacks is refused by each run
  if (!a.sweep.probes.empty()) resolve_probes(a.sweep.probes, kMaxCheckedLayers);
  return writer_flags;
}

}  // namespace

CommandRun register_sweep(CLI::App* cmd) {
  auto args = std::make_shared<SweepArgs>();
  cmd->description(
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
  cmd->add_option("--grid", args->sweep.grid,
                  "knobs and their values, e.g. 'dtype=bf16,fp16,fp32 batch=1,8,32 tp=1,2,4' "
                  "(run-config fields), or @FILE (configs/grid-seeds-12.txt); may be left out to "
                  "resume or wait for the sweep in DIR");
  cmd->add_option("--prompts", args->sweep.prompts,
                  "file of prompts (as for run); required with --grid");
  cmd->add_option("--model", args->sweep.model,
                  "Hugging Face model directory or llama2.c .bin (default: bundled kjv-llama)");
  cmd->add_option("--tokenizer", args->sweep.tokenizer,
                  "tokenizer file (default: found beside the model)");
  cmd->add_option("-o,--output", args->sweep.output, "sweep directory; required");
  cmd->add_option("-j,--jobs", args->sweep.jobs, "configurations run at once on this machine")
      ->capture_default_str();
  add_compression_option(*cmd, args->compression);
  cmd->add_flag("--certify", args->certify,
                "every run proves that tapping changed nothing (run --certify)");
  cmd->add_option("--probes", args->sweep.probes,
                  "hidden sites every run records, as for run: default, all, none (tokens, "
                  "top-K logits and log-sum-exp only: the cheap first pass before zoom), or a "
                  "list like embed,L*/out; kept in sweep.json (default: default)");
  cmd->add_option("--samples", args->sweep.samples,
                  "K sampled runs per configuration, with seeds --seed .. --seed+K-1 (use with "
                  "--temperature > 0)");
  add_slurm_options(*cmd, args->sweep.slurm, args->sweep.slurm_opt, args->sweep.wait,
                    args->sweep.poll_s,
                    "write DIR/sweep.sbatch (one array task per configuration still missing, "
                    "each a `driftscope run`) and submit it with sbatch",
                    "wait until the sweep's Slurm jobs have left the queue, then record which "
                    "configurations are complete (with --slurm: after submitting)");
  cmd->add_flag("-q,--quiet", args->sweep.quiet, "no progress lines on stderr");
  return [args, cmd] {
    apply_config_file(*cmd, args->run);
    args->sweep.writer_flags = check_flags(*cmd, *args);
    args->sweep.base = args->run.config;
    args->sweep.config_file = args->run.config_file;
    args->sweep.dry_run = args->run.dry_run;
    args->sweep.option_of = [cmd](const std::string& knob) { return option_named(cmd, knob); };
    return run_sweep(args->sweep);
  };
}

}  // namespace ds
