// Producing and printing a diff report, shared by `diff`, `demo` and zoom: the recorded tokenizer
// as the decoder, terminal width and colour rules, JSON and HTML output (the JSON and HTML writers
// serve `attribute` and `stats` too). Their options: src/cli/report_args.h.
#pragma once

#include <string>

#include "diff/diff.h"
#include "trace/floor_file.h"
#include "trace/reader.h"

namespace ds {

struct ReportStyle {
  std::string color = "auto";  // auto (terminal on stdout and NO_COLOR unset), always, never
  int width = 0;               // 0 = the terminal's
  int pages = 3;               // sequences shown in detail
  bool sites = false;          // per-site drift tables
};

// The widths a terminal report takes (diff, demo, attribute): --width outside them is refused; the
// terminal's own width and COLUMNS, which the environment sets, are clamped into them.
constexpr int kMinReportWidth = 40;
constexpr int kMaxReportWidth = 1000;

// Diffs two traces, decoding tokens with `tokenizer` (--tokenizer) when given, else with the
// tokenizer recorded in A when its file is still the one recorded (src/workflow/recorded_model.h);
// a note on stderr says when tokens are shown as ids for that reason, or decoded with another.
diff::Report diff_with_recorded_tokenizer(const trace::TraceReader& a, const trace::TraceReader& b,
                                          diff::DiffOptions options,
                                          const std::string& tokenizer = {});

// Judges `report` (A vs B, diffed with DiffOptions::noise_sums) against the noise floor of
// `floor_path` at level `alpha`: report.noise (diff/noise_floor.h).
void judge_against_floor(diff::Report& report, const trace::FloorFile& floor,
                         const std::string& floor_path, double alpha);

// The floor of `floor_path`, read and checked against trace `a` (diff/noise_floor.h check_floor).
// Throws ds::Error with a hint for a floor of another model, configuration or tokens, of another
// format version, damaged, or of fewer than 20 replays.
trace::FloorFile read_checked_floor(const std::string& floor_path, const trace::TraceReader& a);

// The terminal report on stdout.
void print_terminal_report(const diff::Report& report, const ReportStyle& style);

// The JSON report to FILE, or stdout for "-". Throws ds::Error when FILE cannot be written.
void write_json_report(const diff::Report& report, const std::string& path);
// A rendered JSON report to FILE, or stdout for "-"; the same error when FILE cannot be written.
void write_json_text(const std::string& text, const std::string& path);

// The self-contained HTML report to FILE. Throws ds::Error when FILE cannot be written.
void write_html_report(const diff::Report& report, const std::string& path);
// A rendered HTML page to FILE, or stdout for "-"; the same error when FILE cannot be written.
void write_html_text(const std::string& text, const std::string& path);

}  // namespace ds
