// `driftscope run`: generate under one run configuration and record every layer boundary into a
// trace file (format v1).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>

#include "common/error.h"
#include "src/cli/commands.h"
#include "src/cli/model_args.h"
#include "src/cli/run_config_args.h"
#include "src/console/output.h"
#include "src/experiment/attribution_run.h"
#include "src/experiment/plan_file.h"
#include "src/experiment/trace_recorder.h"
#include "src/model/text_file.h"
#include "src/workflow/command_files.h"
#include "src/workflow/recorded_model.h"
#include "src/workflow/traced_command.h"
#include "trace/certificate.h"
#include "trace/reader.h"

namespace ds {
namespace {

struct RunArgs {
  ModelArgs model;
  RunConfigArgs run;
  std::string prompts_file;
  std::string force_tokens;
  std::string probes = "default";
  std::string hidden_dtype = "f32";
  std::string compression = trace::compression_name(trace::WriterOptions{}.deflate_level);
  int topk = 20;
  bool topk_given = false;              // --trace-topk on the command line (else the default, 20)
  std::optional<std::string> old_topk;  // --topk, the name before --trace-topk: refused with a hint
  bool full_logits = false;
  std::string kernels = "auto";
  std::string plan_file;
  std::string output;
  bool force = false;
  bool quiet = false;
  bool verbose = false;
  bool certify = false;
};

int run_run(const RunArgs& a) {
  const RunConfig& rc = a.run.config;
  validate(rc);
  apply_threads(a.run);
  const int deflate_level = trace::parse_compression(a.compression);
  if (print_dry_run(a.run)) return 0;
  if (a.output.empty()) {
    throw Error("run needs an output file", "pass -o trace.h5");
  }
  const auto hidden_dtype = trace::parse_hidden_dtype(a.hidden_dtype);
  if (a.old_topk) {
    throw Error("--topk is now called --trace-topk",
                "--trace-topk N keeps N logits per position in the trace; --top-k N samples "
                "among the N most likely tokens");
  }
  if (a.topk < 1) {
    throw Error(fmt::format("trace-topk {} must be >= 1", a.topk), "--trace-topk takes N >= 1");
  }
  records_kernels(a.kernels, rc.device);  // refuses a bad value or an impossible "on" up front
  if (!a.force_tokens.empty() &&
      (a.model.prompt || a.model.prompt_ids || !a.prompts_file.empty())) {
    throw Error("--force-tokens takes the prompts from its trace",
                "drop --prompt, --prompt-ids and --prompts");
  }
  // With --force-tokens, the model is the one the forced trace records (verified), unless
  // --model names one (then checked to be the same files once loaded).
  std::optional<trace::TraceReader> forced;
  std::optional<RecordedModel> forced_model;
  ModelArgs model = a.model;
  if (!a.force_tokens.empty()) {
    forced.emplace(trace::TraceReader::open(a.force_tokens));
    forced_model = recorded_model(*forced);
    if (model.model.empty()) {
      verify_recorded_model(*forced_model,
                            "--force-tokens runs the model its trace records: put it back at that "
                            "path, or pass the model with --model");
      model.model = forced_model->model.string();
      if (model.tokenizer.empty() && forced_model->tokenizer &&
          tokenizer_changed(*forced_model).empty()) {
        model.tokenizer = forced_model->tokenizer->path.string();
      }
    }
  }
  CommandFiles files;  // the trace never over what the run reads, --force or not
  files.model_inputs(model.model, model.tokenizer);
  files.input(a.prompts_file, "the prompts file");
  files.input(a.run.config_file, "the config file");
  files.input(a.force_tokens, "the trace of --force-tokens");
  files.input(a.plan_file, "the plan file");
  files.output(a.output, "trace", "-o", a.force,
               "pass --force to overwrite it, or choose another -o path");
  files.check();
  std::optional<PlanSpec> plan;
  if (!a.plan_file.empty()) {
    plan = parse_plan_spec(
        read_text_file(a.plan_file, 1u << 20, "plan file",
                       "--plan takes a plan file as explain and calibrate write it"),
        a.plan_file);
  }
  LoadedModel lm =
      load_model_and_prompt(model, /*need_tokenizer=*/false,
                            /*want_prompt=*/a.prompts_file.empty() && a.force_tokens.empty());
  if (forced_model && !a.model.model.empty()) {
    check_loaded_is_recorded(*forced_model, lm.model,
                             "--force-tokens consumes tokens of the model its trace records: pass "
                             "that model with --model, or leave --model out");
  }
  if (plan) make_plan(*plan, rc, lm.model.config.n_layers);  // its op names, before any output
  std::vector<Prompt> prompts;
  if (a.prompts_file.empty()) {
    prompts.push_back({a.model.prompt, lm.prompt});
  } else {
    if (a.model.prompt || a.model.prompt_ids) {
      throw Error("--prompts cannot be combined with --prompt or --prompt-ids",
                  "give the prompts either in the file or on the command line");
    }
    prompts = read_prompts_file(a.prompts_file, lm.tokenizer.get(), !a.model.no_special_in_text,
                                lm.model.config.max_seq_len, lm.tokenizer_error);
  }
  apply_add_bos(prompts, rc.add_bos, lm.bos_id());
  if (lm.tokenizer_error) {  // the run needs none: it goes on, saying why the trace records none
    print_note(
        "note: the tokenizer beside the model cannot be loaded ({}): the trace records "
        "no tokenizer\n",
        lm.tokenizer_error->what());
  }
  if (forced) prompts = forced_prompts(*forced);

  trace::WriterOptions writer;
  writer.path = a.output;
  writer.hidden_dtype = hidden_dtype;
  const int vocab = lm.model.config.vocab_size;
  if (a.topk_given && a.topk > vocab) {  // the default 20 is cut to the vocabulary instead
    throw Error(fmt::format("--trace-topk {} is more than the model's {} tokens", a.topk, vocab),
                fmt::format("--trace-topk takes 1..{}; --full-logits keeps every logit", vocab));
  }
  writer.topk = a.topk;
  writer.full_logits = a.full_logits;
  writer.deflate_level = deflate_level;
  writer.force = a.force;
  std::string write_error_detail;
  TracedRunResult res;
  try {
    res = run_traced_command("run", rc, a.probes, writer, lm, prompts, a.force_tokens, a.kernels,
                             &write_error_detail, plan, a.certify);
  } catch (const Error&) {
    if (a.verbose && !write_error_detail.empty()) {
      print_note("driftscope: trace write failure in detail:\n{}\n", write_error_detail);
    }
    throw;
  }
  if (!a.quiet) {
    int tokens = 0;
    for (const auto& s : res.sequences) tokens += static_cast<int>(s.tokens.size()) - s.prompt_len;
    print_note(
        "driftscope: wrote {} ({} of {} sequences, {} generated tokens, {} hidden "
        "sites){}\n",
        a.output, res.sequences.size(), prompts.size(), tokens,
        resolve_probes(a.probes, lm.model.config.n_layers).size(),
        res.complete ? "" : " — interrupted: complete=0");
    if (a.certify && res.complete) {
      print_note("driftscope: certify: {}\n",
                 trace::certify_verdict(trace::TraceReader::open(a.output).certify_json()));
    }
  }
  return res.complete ? 0 : 130;
}

}  // namespace

CommandRun register_run(CLI::App* cmd) {
  auto args = std::make_shared<RunArgs>();
  cmd->description(
      "Generate under one run configuration and record hidden states at every tapped layer "
      "boundary, plus top-K logits, into an HDF5 trace (docs/trace-format.md). Ctrl-C stops at "
      "the next token and leaves a readable trace with complete=0.");
  add_model_options(*cmd, args->model);
  add_run_config_options(*cmd, args->run);
  cmd->add_option("--prompts", args->prompts_file,
                  "file of prompts: one per line, or JSONL {\"text\": ...} / {\"ids\": [...]}");
  cmd->add_option("--force-tokens", args->force_tokens,
                  "teacher forcing: consume the prompts and generated tokens of this trace instead "
                  "of this run's own choices, still recording this run's logits and hidden states "
                  "(so drift stays comparable past the first flip)");
  cmd->add_option("--probes", args->probes,
                  "hidden sites to record: default (embed, L*/attn_out, L*/mlp_out, L*/out, "
                  "final_norm), all, none, or a list like embed,L0/attn_norm,L*/out")
      ->capture_default_str();
  cmd->add_option("--hidden-dtype", args->hidden_dtype, "storage of hidden states: f32, f16, bf16")
      ->capture_default_str();
  cmd->add_option("--trace-topk", args->topk,
                  "logits kept per position in the trace (sorted, with log-sum-exp), at most the "
                  "model's vocabulary; sampling's is --top-k")
      ->capture_default_str();
  cmd->add_option("--topk", args->old_topk)->group("");  // hidden: the old name, refused
  cmd->add_flag("--full-logits", args->full_logits, "also store every logits row in full");
  add_compression_option(*cmd, args->compression);
  cmd->add_option("--kernels", args->kernels,
                  "record every GPU kernel with its tap site into /kernels (CUPTI): auto (on for "
                  "--device cuda when built with CUPTI), on, off")
      ->capture_default_str();
  cmd->add_option("--plan", args->plan_file,
                  "numerics plan file (explain's and calibrate's trials, docs/cli.md): some ops "
                  "decided by a second configuration, or another valid reduction order at each");
  cmd->add_option("-o,--output", args->output, "trace file to write (.h5); required");
  cmd->add_flag("--certify", args->certify,
                "prove that tapping changed nothing: also run untapped (no probes, same batch "
                "and plan) and record per row a digest of both passes' logits and tokens, with "
                "the verdict in the trace (identical, or the first row that differs)");
  cmd->add_flag("--force", args->force, "overwrite an existing trace file");
  cmd->add_flag("-q,--quiet", args->quiet, "no summary line on stderr");
  cmd->add_flag("--verbose", args->verbose,
                "on a trace write failure, also print the failed HDF5 call and HDF5's error stack");
  return [args, cmd] {
    apply_config_file(*cmd, args->run);
    args->topk_given = cmd->count("--trace-topk") > 0;
    return run_run(*args);
  };
}

}  // namespace ds
