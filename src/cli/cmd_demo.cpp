// `driftscope demo`: the tool's answer in one command. On the bundled model and prompts it runs
// two contrasting configurations (A: fp32, batch 1, batch-invariant GEMMs; B: bf16, batch 8,
// shape-heuristic GEMMs — an engine under load; or --config-a / --config-b), writes both traces,
// and prints the diff report. Request flags (max_new, sampling) apply to both runs, the other
// run-configuration flags to B.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/error.h"
#include "diff/diff.h"
#include "diff/noise_floor.h"
#include "kernels/cpu/cpu_exec.h"
#include "src/cli/commands.h"
#include "src/cli/report_args.h"
#include "src/cli/run_config_args.h"
#include "src/console/output.h"
#include "src/experiment/trace_recorder.h"
#include "src/workflow/calibrate.h"
#include "src/workflow/loaded_model.h"
#include "src/workflow/report_file.h"
#include "src/workflow/traced_command.h"
#include "trace/swmr_file.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

struct DemoArgs {
  ModelArgs model;
  RunConfigArgs run;     // the flags as given; see run_configs() for what they mean
  std::string config_a;  // run A's configuration (TOML) instead of the fp32 default
  std::string config_b;  // run B's configuration (TOML) instead of the bf16 batch-8 default
  std::string prompts_file;
  std::string out = "driftscope-demo";
  bool force = false;
  ReportStyle style;
  bool html = false;  // also write report.html to --out and print its path
  // both traces' filters
  std::string compression = trace::compression_name(trace::WriterOptions{}.deflate_level);
  bool certify = false;  // both runs: run --certify
  int floor_runs = 0;    // --floor N: A's noise floor of N replays, B judged against it
};

constexpr int kDemoMaxNew = 120;
constexpr const char* kBothGroup = "Both runs: the request (over --config-a and --config-b)";
constexpr const char* kAGroup = "Run A: the reference";
constexpr const char* kBGroup = "Run B: the engine under study (over --config-b)";

// The flags of the request itself: what is generated, the same for both runs.
bool is_request_flag(const std::string& name) {
  static const std::set<std::string> request = {
      "max-new", "stop-token", "temperature", "top-p", "top-k", "seed", "repetition-penalty"};
  return request.count(name) > 0;
}

RunConfig demo_default(DType dtype, int batch, GemmPolicy policy) {
  RunConfig c;
  c.max_new = kDemoMaxNew;
  c.dtype = dtype;
  c.batch = batch;
  c.gemm_policy = policy;
  return c;
}

// A: --config-a or fp32, batch 1, invariant GEMMs. B: --config-b or bf16, batch 8, heuristic
// GEMMs. Request flags apply to both, every other run-configuration flag to B only.
std::pair<RunConfig, RunConfig> run_configs(const CLI::App& cmd, const DemoArgs& a) {
  const RunConfig plain = demo_default(DType::fp32, 1, GemmPolicy::invariant);
  RunConfig ca = with_config_file(plain, a.config_a, &cmd);
  RunConfig cb = a.config_b.empty() ? demo_default(DType::bf16, 8, GemmPolicy::heuristic)
                                    : with_config_file(plain, a.config_b, &cmd);
  ca = with_given_flags(cmd, ca, is_request_flag);
  cb = with_given_flags(cmd, cb, [](const std::string&) { return true; });
  validate(ca);
  validate(cb);
  return {ca, cb};
}

// "dtype=bf16 tp=4": the fields of `c` whose value differs in `other`.
std::string differing_fields(const RunConfig& c, const RunConfig& other) {
  std::vector<std::string> out;
  for (const auto& d : diff::config_differences(to_json(c), to_json(other))) {
    std::string v = d.a;
    if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
    out.push_back(d.field + "=" + v);
  }
  if (out.empty()) return "the same configuration as the other run";
  return fmt::format("{}", fmt::join(out, " "));
}

void run_one(const char* name, const RunConfig& c, const RunConfig& other, const LoadedModel& lm,
             std::vector<Prompt> prompts, const fs::path& out, int deflate_level, bool certify) {
  validate_for_model(c, lm.model.config);
  apply_add_bos(prompts, c.add_bos, lm.bos_id());
  trace::WriterOptions writer;
  writer.path = out;
  writer.force = true;  // refused up front in run_demo unless --force
  writer.deflate_level = deflate_level;
  print_note("run {}: {} over {} prompts -> {}\n", name, differing_fields(c, other), prompts.size(),
             out.string());
  const auto res = run_traced_command(fmt::format("run {}", name), c, "default", writer, lm,
                                      prompts, {}, "auto", nullptr, std::nullopt, certify);
  if (!res.complete) {
    throw Error("interrupted", "the traces written so far are in " + out.parent_path().string());
  }
}

// One rule with `run`: existing outputs are kept unless --force, which replaces regular files
// only, never a trace another run is writing, and never one of demo's inputs.
void check_outputs(const DemoArgs& a, const std::vector<fs::path>& traces,
                   const std::vector<fs::path>& reports, const std::optional<fs::path>& floor) {
  CommandFiles files;
  files.model_inputs(a.model.model, a.model.tokenizer);
  files.input(a.prompts_file, "the prompts file");
  files.input(a.config_a, "the config file");
  files.input(a.config_b, "the config file");
  const std::string hint = "pass --force to overwrite it, or choose another --out folder";
  for (const auto& p : traces) files.output(p, "trace", "--out", a.force, hint);
  for (const auto& p : reports) files.output(p, "report", "--out", a.force, hint);
  if (floor) files.output(*floor, "noise floor", "--out", a.force, hint);
  files.check();
  for (const auto& p : traces) trace::check_trace_target(p, a.force);  // held by a running writer
}

int run_demo(const CLI::App& cmd, DemoArgs& a) {
  const auto [ca, cb] = run_configs(cmd, a);
  apply_threads(a.run);
  const int deflate_level = trace::parse_compression(a.compression);
  if (a.run.dry_run) {
    fmt::print("# run A\n{}\n# run B\n{}", to_toml(ca), to_toml(cb));
    return 0;
  }
  const fs::path out(a.out), path_a = out / "a.h5", path_b = out / "b.h5",
                             path_json = out / "report.json";
  std::vector<fs::path> reports{path_json};
  if (a.html) reports.push_back(out / "report.html");
  const fs::path path_floor = out / "floor.h5";
  if (a.floor_runs != 0) {
    if (a.floor_runs < diff::kMinFloorRuns) {
      throw Error(
          fmt::format("--floor {} is fewer than {} replays", a.floor_runs, diff::kMinFloorRuns),
          "--floor N calibrates A with N benign replays: 99 lets a p-value reach 0.01");
    }
  }
  check_outputs(a, {path_a, path_b}, reports,
                a.floor_runs != 0 ? std::optional<fs::path>(path_floor) : std::nullopt);
  LoadedModel lm = load_model_and_prompt(a.model, /*need_tokenizer=*/true, /*want_prompt=*/false);
  validate_for_model(ca, lm.model.config);  // both before A runs: B's refusal must not follow it
  validate_for_model(cb, lm.model.config);
  // Beside the model: in a Hugging Face directory, or in the folder of a llama2.c .bin.
  const fs::path model_folder =
      lm.model.format == ModelFormat::HuggingFace ? lm.model.path : lm.model.path.parent_path();
  const fs::path prompts_file =
      !a.prompts_file.empty() ? fs::path(a.prompts_file) : model_folder / "prompts.txt";
  if (!fs::exists(prompts_file)) {
    throw Error(fmt::format("no prompts file '{}'", prompts_file.string()),
                "pass --prompts FILE (one prompt per line)");
  }
  const std::vector<Prompt> prompts =
      read_prompts_file(prompts_file, lm.tokenizer.get(), true, lm.model.config.max_seq_len);
  fs::create_directories(out);
  run_one("A", ca, cb, lm, prompts, path_a, deflate_level, a.certify);
  run_one("B", cb, ca, lm, prompts, path_b, deflate_level, a.certify);
  if (a.floor_runs != 0) {  // A's noise floor (docs/metrics.md, "Noise floors")
    CalibrateOptions co;
    co.a = path_a.string();
    co.output = path_floor.string();
    co.runs = a.floor_runs;
    co.replay.jobs = std::max(1, ops::cpu_threads());
    co.force = true;  // refused up front unless --force
    print_note("floor: A under {} benign reduction orders -> {}\n", a.floor_runs,
               path_floor.string());
    if (const int rc = run_calibrate(co); rc != 0) return rc;
  }
  const auto ta = trace::TraceReader::open(path_a);
  const auto tb = trace::TraceReader::open(path_b);
  std::optional<trace::FloorFile> floor;
  if (a.floor_runs != 0) floor = read_checked_floor(path_floor.string(), ta);
  diff::DiffOptions opt;
  opt.noise_sums = floor.has_value();
  diff::Report report = diff_with_recorded_tokenizer(ta, tb, opt);
  if (floor) judge_against_floor(report, *floor, path_floor.string(), 0.01);
  write_json_report(report, path_json.string());
  print_note("report: {} (JSON: {})\n\n", a.out, path_json.string());
  print_terminal_report(report, a.style);
  if (a.html) {
    const std::string html = (out / "report.html").string();
    write_html_report(report, html);
    fmt::print("HTML report: {}\n", html);
  }
  return 0;
}

}  // namespace

CommandRun register_demo(CLI::App* cmd) {
  auto args = std::make_shared<DemoArgs>();
  cmd->description(
      "Run the bundled model under two contrasting configurations over its bundled prompts, "
      "write both traces to --out, and print where they part ways. A: fp32, batch 1, "
      "batch-invariant GEMMs (or --config-a FILE); B: bf16, batch 8, shape-heuristic GEMMs, an "
      "engine under load (or --config-b FILE). The request flags (--max-new, sampling, "
      "--stop-token) apply to both runs; every other run-configuration flag to B only.");
  cmd->add_option("-m,--model", args->model.model,
                  "Hugging Face model directory or llama2.c .bin (default: bundled kjv-llama)");
  cmd->add_option("--tokenizer", args->model.tokenizer, "tokenizer (default: beside the model)");
  args->run.config =
      demo_default(DType::bf16, 8, GemmPolicy::heuristic);  // B's: the defaults --help shows
  add_run_config_options(*cmd, args->run);
  cmd->remove_option(cmd->get_option("--config"));  // two configurations: --config-a, --config-b
  for (CLI::Option* op : cmd->get_options()) {
    if (op->get_group() != "Run configuration (docs/configurations.md)") continue;
    op->group(is_request_flag(op->get_lnames().front()) ? kBothGroup : kBGroup);
  }
  cmd->add_option(
         "--config-a", args->config_a,
         "run A's configuration, a TOML file of run-config fields (e.g. configs/fp32.toml); "
         "fields it leaves out keep their defaults")
      ->group(kAGroup);
  cmd->add_option("--config-b", args->config_b,
                  "run B's configuration instead of the bf16 batch-8 one (e.g. "
                  "configs/bf16-tp4.toml); fields it leaves out keep their defaults")
      ->group(kBGroup);
  cmd->add_option("--prompts", args->prompts_file,
                  "prompts file (default: prompts.txt in the model's folder)");
  cmd->add_option("--out", args->out, "folder for a.h5, b.h5, report.json (and report.html)")
      ->capture_default_str();
  cmd->add_flag("--html", args->html, "also write report.html to --out and print its path");
  add_compression_option(*cmd, args->compression);
  cmd->add_flag("--certify", args->certify,
                "both runs prove that tapping changed nothing (run --certify)");
  cmd->add_option("--floor", args->floor_runs,
                  "calibrate A's noise floor with N benign replays (>= 20; 99 lets a p-value "
                  "reach 0.01) into --out/floor.h5, and say how many of B's flips reordering "
                  "alone predicts (diff --floor)");
  cmd->add_flag("--force", args->force,
                "overwrite a.h5, b.h5, report.json (and report.html, floor.h5) in --out");
  add_report_style_options(*cmd, args->style);
  return [args, cmd] { return run_demo(*cmd, *args); };
}

}  // namespace ds
