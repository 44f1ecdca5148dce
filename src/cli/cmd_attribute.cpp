// `driftscope attribute A.h5 [--config B.toml | run-config flags]`: where drift is born. B runs
// teacher-forced on A's tokens with every layer shadowed on A's recorded inputs
// (src/experiment/attribution_run.h); diff/attribution.h turns the pairs into local vs inherited
// error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "diff/attribution.h"
#include "src/cli/commands.h"
#include "src/cli/report_args.h"
#include "src/cli/run_config_args.h"
#include "src/console/output.h"
#include "src/experiment/attribution_run.h"
#include "src/experiment/run_metadata.h"
#include "src/workflow/attribution_report.h"
#include "src/workflow/loaded_model.h"
#include "src/workflow/recorded_model.h"
#include "src/workflow/report_file.h"
#include "trace/reader.h"
#include "trace/schema.h"
#include "viewer/attribution_html.h"
#include "viewer/attribution_json.h"
#include "viewer/attribution_terminal.h"

namespace ds {
namespace {

struct AttributeArgs {
  std::string a;
  ModelArgs model;
  RunConfigArgs run;
  std::string json;
  std::string html;
  int width = 100;
  bool quiet = false;
  bool force = false;
};

// The model B runs: --model when given (checked against A's recorded files once loaded), else
// the model A records, found again (a relative path against A's working folder) and verified
// file by file before it is loaded.
ModelArgs model_of(const AttributeArgs& args, const trace::TraceReader& a) {
  ModelArgs ma = args.model;
  if (!ma.model.empty()) return ma;
  const RecordedModel recorded = recorded_model(a);
  verify_recorded_model(recorded,
                        "attribute runs the model A records: put it back at that path, or pass "
                        "the model with --model");
  ma.model = recorded.model.string();
  if (ma.tokenizer.empty() && recorded.tokenizer && tokenizer_changed(recorded).empty()) {
    ma.tokenizer = recorded.tokenizer->path.string();
  }
  return ma;
}

int run_attribute(const AttributeArgs& args) {
  const RunConfig& rc = args.run.config;
  check_attribution_device(rc);
  apply_threads(args.run);  // before validate, which would look for the CUDA module
  validate(rc);
  if (print_dry_run(args.run)) return 0;
  const auto a = trace::TraceReader::open(args.a);
  const ModelArgs model = model_of(args, a);
  CommandFiles files;
  files.input(args.a, "the input trace");
  files.input(args.run.config_file, "the config file");
  files.model_inputs(model.model, model.tokenizer);
  add_report_outputs(files, args.json, args.html, args.force);
  files.check();
  LoadedModel lm = load_model_and_prompt(model, /*need_tokenizer=*/false, /*want_prompt=*/false);
  check_attribution_model(a, lm);
  const diff::AttributionReport report = attribute_groups(lm, a, rc, {{}}).front();
  if (!args.json.empty()) write_json_text(viewer::render_attribution_json(report), args.json);
  if (!args.html.empty()) write_html_text(viewer::render_attribution_html(report), args.html);
  if (!args.quiet && !report_on_stdout(args.json, args.html)) {
    const std::string text = viewer::render_attribution_terminal(report, args.width);
    write_stdout(text);
  }
  return 0;
}

}  // namespace

CommandRun register_attribute(CLI::App* cmd) {
  auto args = std::make_shared<AttributeArgs>();
  cmd->description(
      "Where drift is born: run configuration B (run-config flags or --config B.toml) "
      "teacher-forced on reference trace A's tokens, and replay every layer of B on A's recorded "
      "input to that layer. Local error = B's layer on A's input vs A's output of that layer; "
      "inherited = total drift (B's own run vs A) minus local. Ranks layers by local error, marks "
      "the origins (local error above the noise floor) and says in one line where error is "
      "born. A needs embed, L*/out and final_norm (run --probes 'embed,L*/out,final_norm'); with "
      "L*/resid_mid too (--probes all) attention and MLP are told apart. CPU only. B consumes "
      "A's tokens, so the sampling and generation-length flags have no effect. "
      "Metrics: docs/metrics.md §10.");
  cmd->add_option("a", args->a, "reference trace (.h5), recorded with hidden states in f32")
      ->required();
  cmd->add_option("-m,--model", args->model.model,
                  "the model A was recorded with (llama2.c .bin or Hugging Face directory); "
                  "default: the model A records, verified against its recorded digests");
  add_run_config_options(*cmd, args->run);
  cmd->add_option("--json", args->json, "write the report as JSON to FILE, or - for stdout");
  cmd->add_option("--html", args->html,
                  "write the report as one self-contained HTML page to FILE, or - for stdout "
                  "(docs/html-report.md)");
  cmd->add_flag("--force", args->force, "replace existing --json and --html files");
  add_width_option(*cmd, args->width,
                   fmt::format("report width in columns, {}..{}", kMinReportWidth, kMaxReportWidth))
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", args->quiet, "no terminal report");
  return [args, cmd] {
    apply_config_file(*cmd, args->run);
    return run_attribute(*args);
  };
}

}  // namespace ds
