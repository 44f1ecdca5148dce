// `driftscope diff A.h5 B.h5`: where two runs of the same model and prompts part ways. Parses,
// calls diff::diff_traces, renders (terminal, JSON, HTML), and maps --fail-on to the exit code.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

#include "common/error.h"
#include "diff/diff.h"
#include "diff/gate.h"
#include "src/cli/commands.h"
#include "src/cli/report_args.h"
#include "src/console/output.h"
#include "src/workflow/report_file.h"

namespace ds {
namespace {

struct DiffArgs {
  std::string a, b;
  std::vector<std::string> fail_on;
  std::string json;
  std::string html;
  ReportStyle style;
  std::vector<int> seqs;
  bool allow_model_mismatch = false;
  bool quiet = false;
  std::string floor;
  double alpha = 0.01;
  bool force = false;
  std::string tokenizer;  // decodes instead of the one A records
};

int run_diff(const DiffArgs& a) {
  std::vector<diff::GateCondition> gates;
  for (const auto& spec : a.fail_on) {
    gates.push_back(diff::parse_gate(spec));
    if (gates.back().kind == diff::GateCondition::Kind::beyond_noise && a.floor.empty()) {
      throw Error("--fail-on beyond-noise needs a noise floor",
                  "give --floor FLOOR, calibrated on A (driftscope calibrate A.h5 -o FLOOR)");
    }
  }
  if (!(a.alpha > 0 && a.alpha < 1)) {
    throw Error(fmt::format("--alpha {} is not in (0, 1)", a.alpha),
                "--alpha takes the significance level, e.g. 0.01 (the default)");
  }
  CommandFiles files;
  files.input(a.a, "the input trace");
  files.input(a.b, "the input trace");
  files.input(a.tokenizer, "the tokenizer");
  files.input(a.floor, "the noise floor");
  add_report_outputs(files, a.json, a.html, a.force);
  files.check();
  const auto ta = trace::TraceReader::open(a.a);
  const auto tb = trace::TraceReader::open(a.b);
  std::optional<trace::FloorFile> floor;
  if (!a.floor.empty()) floor = read_checked_floor(a.floor, ta);

  diff::DiffOptions opt;
  opt.allow_model_mismatch = a.allow_model_mismatch;
  opt.sequences = a.seqs;
  opt.noise_sums = floor.has_value();
  diff::Report report = diff_with_recorded_tokenizer(ta, tb, opt, a.tokenizer);
  if (floor) judge_against_floor(report, *floor, a.floor, a.alpha);
  if (!a.json.empty()) write_json_report(report, a.json);
  if (!a.html.empty()) write_html_report(report, a.html);
  if (!a.quiet && !report_on_stdout(a.json, a.html)) print_terminal_report(report, a.style);
  if (gates.empty()) return 0;
  const diff::GateResult g = diff::evaluate_gates(report, gates);
  std::fflush(stdout);
  print_note("{}\n", g.verdict);
  return g.failed ? 1 : 0;
}

}  // namespace

CommandRun register_diff(CLI::App* cmd) {
  auto args = std::make_shared<DiffArgs>();
  cmd->description(
      "Compare two traces of the same model and prompts (A is the reference): prompt and config "
      "differences, the first flipped token with both top-5s, logits metrics (top-5 Jaccard, KL, "
      "log-prob RMSE, margins) and per-site drift (onset, growth). Exit codes: 0 ok, 1 a "
      "--fail-on condition holds, 2 usage or input error. Metrics: docs/metrics.md.");
  cmd->add_option("a", args->a, "reference trace (.h5)")->required();
  cmd->add_option("b", args->b, "trace to compare (.h5)")->required();
  cmd->add_option(
         "--fail-on", args->fail_on,
         "gate: flip | drift=<relative L2> | kl=<nats> | beyond-noise (with --floor); exit 1 "
         "when it holds (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--json", args->json, "write the full report as JSON to FILE, or - for stdout");
  cmd->add_option("--html", args->html,
                  "write a self-contained HTML report (heat maps, margins, top-5s) to FILE, or - "
                  "for stdout");
  cmd->add_flag("--force", args->force, "replace existing --json and --html files");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "decode tokens with this tokenizer (default: the one A records, when its file "
                  "is still the one recorded; else ids)");
  add_report_style_options(*cmd, args->style);
  cmd->add_option("--seq", args->seqs, "compare only these sequence indices (e.g. --seq 0,3)")
      ->allow_extra_args(false)
      ->delimiter(',');
  cmd->add_flag("--allow-model-mismatch", args->allow_model_mismatch,
                "compare traces of different model files anyway");
  cmd->add_option("--floor", args->floor,
                  "A's noise floor (driftscope calibrate A.h5 -o FLOOR): each site's drift in "
                  "floor units with p-values, the onset against it, flips expected from "
                  "reordering alone (docs/metrics.md, \"Noise floors\")");
  cmd->add_option("--alpha", args->alpha,
                  "significance level of the floor's tests (family-wise over the sites)")
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", args->quiet, "no terminal report (the gate verdict still prints)");
  return [args] { return run_diff(*args); };
}

}  // namespace ds
