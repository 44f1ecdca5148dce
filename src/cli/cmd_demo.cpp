// `driftscope demo`: the tool's answer in one command. On the bundled model and prompts it runs
// two contrasting configurations (A: fp32, batch 1, batch-invariant GEMMs; B: bf16, batch 8,
// shape-heuristic GEMMs — an engine under load), writes both traces, and prints the diff report.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "common/error.h"
#include "src/cli/commands.h"
#include "src/cli/model_args.h"
#include "src/cli/diff_report.h"
#include "src/cli/run_config_args.h"
#include "src/cli/traced_command.h"
#include "src/run/trace_recorder.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

struct DemoArgs {
  ModelArgs model;
  RunConfigArgs run;      // the base both runs share (max_new, sampling, ...)
  std::string config_a;   // override of run A's configuration (TOML)
  std::string config_b;   // override of run B's configuration (TOML)
  std::string prompts_file;
  std::string out = "driftscope-demo";
  ReportStyle style;
  bool html = false;  // also write report.html to --out and print its path
};

RunConfig contrast(RunConfig c, const char* dtype, int batch, const char* policy) {
  c.dtype = dtype;
  c.batch = batch;
  c.gemm_policy = policy;
  return c;
}

void run_one(const char* name, const RunConfig& c, const LoadedModel& lm,
             const std::vector<Prompt>& prompts, const fs::path& out) {
  validate(c);
  validate_for_model(c, lm.model.config);
  trace::WriterOptions writer;
  writer.path = out;
  writer.force = true;
  fmt::print(stderr, "run {}: dtype={} batch={} gemm_policy={} over {} prompts -> {}\n", name,
             c.dtype, c.batch, c.gemm_policy, prompts.size(), out.string());
  const auto res = run_traced_command(fmt::format("run {}", name), c, "default", writer, lm, prompts);
  if (!res.complete) {
    throw Error("interrupted", "the traces written so far are in " + out.parent_path().string());
  }
}

// `c` with the fields of a TOML file applied (same keys and checks as --config).
RunConfig with_overrides(RunConfig c, const std::string& file) {
  if (file.empty()) return c;
  CLI::App scratch;
  RunConfigArgs r{c, file, false};
  add_run_config_options(scratch, r);
  apply_config_file(scratch, r);
  return r.config;
}

int run_demo(DemoArgs& a) {
  const RunConfig& base = a.run.config;
  const RunConfig ca = with_overrides(contrast(base, "fp32", 1, "invariant"), a.config_a);
  const RunConfig cb = with_overrides(contrast(base, "bf16", 8, "heuristic"), a.config_b);
  if (a.run.dry_run) {
    fmt::print("# run A\n{}\n# run B\n{}", to_toml(ca), to_toml(cb));
    return 0;
  }
  LoadedModel lm = load_model_and_prompt(a.model, /*need_tokenizer=*/true, /*want_prompt=*/false);
  const fs::path prompts_file =
      !a.prompts_file.empty() ? fs::path(a.prompts_file) : lm.model.path.parent_path() / "prompts.txt";
  if (!fs::exists(prompts_file)) {
    throw Error(fmt::format("no prompts file '{}'", prompts_file.string()),
                "pass --prompts FILE (one prompt per line)");
  }
  std::vector<Prompt> prompts = read_prompts_file(prompts_file, lm.tokenizer.get());
  apply_add_bos(prompts, base.add_bos, lm.bos_id());
  fs::create_directories(a.out);
  run_one("A", ca, lm, prompts, fs::path(a.out) / "a.h5");
  run_one("B", cb, lm, prompts, fs::path(a.out) / "b.h5");
  const auto ta = trace::TraceReader::open(fs::path(a.out) / "a.h5");
  const auto tb = trace::TraceReader::open(fs::path(a.out) / "b.h5");
  const diff::Report report = diff_with_recorded_tokenizer(ta, tb, {});
  write_json_report(report, (fs::path(a.out) / "report.json").string());
  fmt::print(stderr, "report: {} (JSON: {})\n\n", a.out, (fs::path(a.out) / "report.json").string());
  print_terminal_report(report, a.style);
  if (a.html) {
    const std::string html = (fs::path(a.out) / "report.html").string();
    write_html_report(report, html);
    fmt::print("HTML report: {}\n", html);
  }
  return 0;
}

}  // namespace

CommandRun register_demo(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "Run the bundled model under two contrasting configurations — A: fp32, batch 1, "
      "batch-invariant GEMMs; B: bf16, batch 8, shape-heuristic GEMMs (an engine under load) — "
      "over its bundled prompts, write both traces to --out, and print where they part ways.");
  cmd->add_option("-m,--model", args->model.model,
                  "Hugging Face model directory or llama2.c .bin (default: bundled stories260K)");
  cmd->add_option("--tokenizer", args->model.tokenizer, "tokenizer (default: beside the model)");
  args->run.config.max_new = 120;
  add_run_config_options(*cmd, args->run);
  cmd->add_option("--config-a", args->config_a, "TOML overrides of run A (e.g. configs/fp32.toml)");
  cmd->add_option("--config-b", args->config_b, "TOML overrides of run B (e.g. configs/bf16-tp4.toml)");
  cmd->add_option("--prompts", args->prompts_file, "prompts file (default: prompts.txt beside the model)");
  cmd->add_option("--out", args->out, "folder for a.h5, b.h5 and report.json")->capture_default_str();
  cmd->add_flag("--html", args->html, "also write report.html to --out and print its path");
  add_report_style_options(*cmd, args->style);
  return [args, cmd] {
    apply_config_file(*cmd, args->run);
    return run_demo(*args);
  };
}

}  // namespace ds
