// `driftscope stats`: N-way statistics over the traces of a sweep directory or a list of traces,
// per group of configurations, as a terminal table, JSON and an HTML page (docs/metrics.md).
#include <fmt/format.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/error.h"
#include "diff/answers.h"
#include "diff/stats.h"
#include "src/cli/commands.h"
#include "src/console/output.h"
#include "src/model/text_file.h"
#include "src/workflow/diff_report.h"
#include "src/workflow/loaded_model.h"
#include "src/workflow/recorded_model.h"
#include "src/workflow/report_file.h"
#include "src/workflow/sweep_plan.h"
#include "trace/reader.h"
#include "viewer/stats_html.h"
#include "viewer/stats_json.h"
#include "viewer/stats_terminal.h"

namespace ds {
namespace {

struct StatsArgs {
  std::vector<std::string> inputs;
  std::string answers;
  std::string extract;
  std::string group_by = "auto";
  std::string ks;
  std::string json;
  std::string html;
  bool require_all = false;
  bool force = false;
  std::string tokenizer;  // decodes instead of the one the traces record
};

// The traces named on the command line; a sweep directory gives its configurations' traces,
// those without a complete trace going to `missing`.
std::vector<std::filesystem::path> collect(const std::vector<std::string>& inputs,
                                           std::vector<std::string>& missing) {
  std::vector<std::filesystem::path> traces;
  for (const auto& in : inputs) {
    if (!std::filesystem::is_directory(in)) {
      traces.emplace_back(in);
      continue;
    }
    const SweepState s = read_sweep_state(in);
    for (const auto& e : s.entries) {
      const auto t = entry_trace(in, e);
      if (trace_done(t, e.config, {}, /*read_rows=*/false)) {  // read below, watched
        traces.push_back(t);
      } else {
        missing.push_back(e.name);
      }
    }
  }
  return traces;
}

// One file named twice (another spelling of its path, a hard link, a trace that a sweep folder
// also gives) would count as two runs and skew every statistic: refused, by device and inode.
void refuse_repeated(const std::vector<std::filesystem::path>& paths) {
  std::map<std::pair<dev_t, ino_t>, const std::filesystem::path*> seen;
  for (const auto& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) continue;  // the reader says what is wrong with it
    const auto [at, added] = seen.emplace(std::pair{st.st_dev, st.st_ino}, &p);
    if (!added) {
      throw Error(fmt::format("'{}' is given twice (the same file as '{}')", p.string(),
                              at->second->string()),
                  "name each trace once (a sweep folder already gives all of its traces)");
    }
  }
}

// Opens every trace, refusing an incomplete one, and checks that they can be compared.
std::vector<trace::TraceReader> open_comparable(const std::vector<std::filesystem::path>& paths) {
  std::vector<trace::TraceReader> readers;
  for (const auto& p : paths) {
    readers.push_back(trace::TraceReader::open(p));
    if (!readers.back().complete()) {
      throw Error(fmt::format("trace '{}' is incomplete (complete=0)", p.string()),
                  "run that configuration again, or leave the trace out");
    }
  }
  std::vector<const trace::TraceReader*> ptrs;
  for (const auto& r : readers) ptrs.push_back(&r);
  diff::check_comparable(ptrs);
  return readers;
}

// Each trace's run, with its outputs decoded when there is a tokenizer and the answers taken out
// of them when there is a rule.
std::vector<diff::StatsRun> read_runs(const std::vector<trace::TraceReader>& readers,
                                      const Tokenizer* tok,
                                      const std::optional<diff::AnswerRule>& rule) {
  std::vector<diff::StatsRun> runs;
  for (const auto& r : readers) {
    diff::StatsRun run = diff::read_stats_run(r);
    if (tok) {
      for (const auto& out : run.outputs) run.texts.push_back(decode_shown(*tok, out));
    }
    if (rule) {
      for (const auto& t : run.texts) run.answers.push_back(rule->extract(t));
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

// The run-config field that forms the groups: --group-by with '_' for '-'; "auto" picks dtype when
// the runs differ in it, "none" (and "auto" otherwise) gives "" (one group).
std::string group_field(const std::string& group_by, const std::vector<diff::StatsRun>& runs) {
  std::string field;
  if (group_by == "auto" || group_by == "none") {
    if (group_by == "auto") {
      for (const auto& r : runs) {
        if (r.config.count("dtype") && r.config.at("dtype") != runs[0].config.at("dtype")) {
          field = "dtype";
        }
      }
    }
  } else {
    if (group_by.empty()) {
      throw Error("--group-by is empty", "name a run-config field (e.g. dtype), auto, or none");
    }
    field = group_by;
    for (char& c : field) c = c == '-' ? '_' : c;
  }
  return field;
}

int run_stats(const StatsArgs& a) {
  if (a.inputs.empty())
    throw Error("stats needs a sweep directory or traces", "driftscope stats DIR");
  std::optional<diff::AnswerRule> rule;
  if (!a.extract.empty()) rule.emplace(a.extract);  // refuses a pattern without one group first
  std::vector<std::string> key;
  if (!a.answers.empty()) {
    if (!rule) {
      throw Error("--answers needs --extract",
                  "pass --extract 'REGEX' with one (group) around the answer");
    }
    const std::string text = read_text_file(a.answers, kMaxAnswerKeyBytes, "answer key",
                                            "--answers takes a text file with one expected "
                                            "answer per line, in prompt order");
    key = diff::parse_answer_key(text, a.answers);
  }
  diff::StatsOptions opt;
  if (!a.ks.empty()) {
    try {
      opt.ks = parse_id_list(a.ks);
    } catch (const Error&) {  // its message speaks of token ids
      throw Error(fmt::format("--k '{}' is not a list of whole numbers >= 1", a.ks),
                  "--k takes a list such as 1,4,8");
    }
  }
  for (int k : opt.ks) {
    if (k < 1) throw Error(fmt::format("--k {} must be >= 1", k), "--k takes a list such as 1,4,8");
  }

  std::vector<std::string> missing;
  const auto paths = collect(a.inputs, missing);
  refuse_repeated(paths);
  CommandFiles files;
  for (const auto& p : paths) files.input(p, "the input trace");
  for (const auto& in : a.inputs) {
    if (std::filesystem::is_directory(in)) files.input(sweep_json_path(in), "the sweep file");
  }
  files.input(a.answers, "the answer key");
  files.input(a.tokenizer, "the tokenizer");
  add_report_outputs(files, a.json, a.html, a.force);
  files.check();
  if (paths.empty()) {
    throw Error("no complete trace to compute statistics over",
                "run the sweep (or wait for it) first: driftscope sweep ... --wait");
  }
  const std::vector<trace::TraceReader> readers = open_comparable(paths);
  const DecodingTokenizer decoding = decoding_tokenizer(readers[0], a.tokenizer);
  const Tokenizer* tok = decoding.tokenizer.get();
  if (rule && !tok) {
    throw Error(fmt::format("--extract needs the traces' tokenizer to decode outputs, and it "
                            "cannot be used{}",
                            decoding.note.empty() ? "" : ": " + decoding.note),
                "the tokenizer recorded in the trace's model_json must still be the file it "
                "was, or pass --tokenizer PATH");
  }
  if (!decoding.note.empty()) print_note("note: {}\n", decoding.note);
  const std::vector<diff::StatsRun> runs = read_runs(readers, tok, rule);
  opt.group_by = group_field(a.group_by, runs);
  diff::StatsReport rep = diff::compute_stats(runs, key.empty() ? nullptr : &key, opt);
  rep.missing = missing;

  if (!report_on_stdout(a.json, a.html)) fmt::print("{}", viewer::render_stats_terminal(rep));
  if (!a.json.empty()) write_json_text(viewer::render_stats_json(rep), a.json);
  if (!a.html.empty()) write_html_text(viewer::render_stats_html(rep), a.html);
  if (a.require_all && !missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += fmt::format("{}{}", names.empty() ? "" : ", ", m);
    print_note("driftscope: {} configuration(s) missing: {}\n", missing.size(), names);
    return 1;
  }
  return 0;
}

}  // namespace

CommandRun register_stats(CLI::App* cmd) {
  auto args = std::make_shared<StatsArgs>();
  cmd->description(
      "N-way statistics over many runs (docs/metrics.md): Div_Index and Div_Percent, "
      "Avg_Std@top1_prob, Avg_Std@Output_Length, unique outputs, TARr@N; with an answer key "
      "TARa@N, accuracy per configuration, Std@Acc, Pass@k, G-Pass@k and mG-Pass@k; and the "
      "attribution of divergence to single knobs. Input: a sweep directory (its configurations "
      "without a complete trace are listed as missing) or trace files of one model and prompt "
      "set.");
  cmd->add_option("inputs", args->inputs, "a sweep directory (sweep -o DIR) or trace files")
      ->required();
  cmd->add_option("--answers", args->answers,
                  "answer key: one expected answer per line, in prompt order (needs --extract)");
  cmd->add_option("--extract", args->extract,
                  "regex with one capture group taking the answer out of a decoded output (its "
                  "last match); enables TARa@N");
  cmd->add_option("--group-by", args->group_by,
                  "run-config field whose values form the groups shown side by side; auto = dtype "
                  "when the runs differ in it; none")
      ->capture_default_str();
  cmd->add_option("--k", args->ks,
                  "k values of Pass@k, G-Pass@k and mG-Pass@k, e.g. 1,4 (default: the samples per "
                  "configuration, n)");
  cmd->add_option("--json", args->json,
                  "also write the statistics as JSON to this file ('-': stdout)");
  cmd->add_option("--html", args->html,
                  "also write the statistics as one self-contained HTML page to this file: the "
                  "groups' table, Div_Index histograms, Avg_Std@top1_prob bars, the runs x runs "
                  "pairwise-divergence matrix and the attribution (docs/html-report.md); - for "
                  "stdout");
  cmd->add_flag("--force", args->force, "replace existing --json and --html files");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "decode outputs with this tokenizer (default: the one the traces record, when "
                  "its file is still the one recorded)");
  cmd->add_flag("--require-all", args->require_all,
                "exit 1 when a configuration of the sweep has no complete trace");
  return [args] { return run_stats(*args); };
}

}  // namespace ds
