// `driftscope diff A.h5 B.h5`: where two runs of the same model and prompts part ways. Parses,
// calls diff::diff_traces, renders (terminal and/or JSON), and maps --fail-on to the exit code.
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "diff/diff.h"
#include "diff/gate.h"
#include "src/cli/commands.h"
#include "src/cli/recorded_tokenizer.h"
#include "viewer/json.h"
#include "viewer/terminal.h"

namespace ds {
namespace {

struct DiffArgs {
  std::string a, b;
  std::vector<std::string> fail_on;
  std::string json;
  std::string color = "auto";
  int width = 0;
  int pages = 3;
  std::vector<int> seqs;
  bool sites = false;
  bool allow_model_mismatch = false;
  bool quiet = false;
};

int terminal_width(int requested) {
  if (requested > 0) return requested;
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return ws.ws_col;
  }
  if (const char* c = std::getenv("COLUMNS")) {
    const int n = std::atoi(c);
    if (n > 0) return n;
  }
  return 100;
}

// --color always|never|auto; auto: a terminal on stdout and NO_COLOR unset or empty.
bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  return isatty(STDOUT_FILENO) && !(no_color && *no_color);
}

int run_diff(const DiffArgs& a) {
  std::vector<diff::GateCondition> gates;
  for (const auto& spec : a.fail_on) gates.push_back(diff::parse_gate(spec));
  const auto ta = trace::TraceReader::open(a.a);
  const auto tb = trace::TraceReader::open(a.b);

  diff::DiffOptions opt;
  opt.allow_model_mismatch = a.allow_model_mismatch;
  opt.sequences = a.seqs;
  std::shared_ptr<Tokenizer> tok;
  if (const auto model = nlohmann::json::parse(ta.model_json(), nullptr, false);
      model.is_object()) {
    tok = recorded_tokenizer(model);
  }
  if (tok) {
    opt.decode = [tok](const std::vector<int32_t>& ids) { return tok->decode(ids); };
  }
  const diff::Report report = diff::diff_traces(ta, tb, opt);

  const bool json_stdout = a.json == "-";
  if (!a.json.empty()) {
    const std::string text = viewer::render_json(report);
    if (json_stdout) {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      std::ofstream out(a.json, std::ios::binary);
      out << text;
      if (!out.flush()) {
        throw Error(fmt::format("cannot write the JSON report to '{}'", a.json),
                    "check the directory exists and is writable, or use --json - for stdout");
      }
    }
  }
  if (!a.quiet && !json_stdout) {
    viewer::TerminalOptions t;
    t.width = terminal_width(a.width);
    t.color = use_color(a.color);
    t.max_pages = a.pages;
    t.sites = a.sites;
    fmt::print("{}", viewer::render_terminal(report, t));
  }
  if (gates.empty()) return 0;
  const diff::GateResult g = diff::evaluate_gates(report, gates);
  std::fflush(stdout);
  fmt::print(stderr, "{}\n", g.verdict);
  return g.failed ? 1 : 0;
}

}  // namespace

CommandRun register_diff(CLI::App& app) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare two traces of the same model and prompts (A is the reference): prompt and config "
      "differences, the first flipped token with both top-5s, logits metrics (top-5 Jaccard, KL, "
      "log-prob RMSE, margins) and per-site drift (onset, growth). Exit codes: 0 ok, 1 a "
      "--fail-on condition holds, 2 usage or input error. Metrics: docs/metrics.md.");
  cmd->add_option("a", args->a, "reference trace (.h5)")->required();
  cmd->add_option("b", args->b, "trace to compare (.h5)")->required();
  cmd->add_option("--fail-on", args->fail_on,
                  "gate: flip | drift=<relative L2> | kl=<nats>; exit 1 when it holds (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--json", args->json, "write the full report as JSON to FILE, or - for stdout");
  cmd->add_option("--color", args->color, "colours: auto (terminal, NO_COLOR unset), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd->add_option("--width", args->width, "report width in columns (default: the terminal's)");
  cmd->add_option("--pages", args->pages, "sequences shown in detail, earliest flips first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seq", args->seqs, "compare only these sequence indices (e.g. --seq 0,3)")
      ->allow_extra_args(false)
      ->delimiter(',');
  cmd->add_flag("--sites", args->sites, "print the per-site drift table of each sequence shown");
  cmd->add_flag("--allow-model-mismatch", args->allow_model_mismatch,
                "compare traces of different model files anyway");
  cmd->add_flag("-q,--quiet", args->quiet, "no terminal report (the gate verdict still prints)");
  return [args] { return run_diff(*args); };
}

}  // namespace ds
