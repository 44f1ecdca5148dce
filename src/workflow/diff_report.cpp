// Diff report production and output.
#include "src/workflow/diff_report.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/env.h"
#include "common/error.h"
#include "diff/noise_floor.h"
#include "src/console/output.h"
#include "src/console/progress.h"
#include "src/workflow/recorded_model.h"
#include "src/workflow/report_file.h"
#include "viewer/diff_html.h"
#include "viewer/diff_json.h"
#include "viewer/diff_terminal.h"

namespace ds {
namespace {

// --width when given (already checked); else the terminal's width or COLUMNS, clamped into
// kMinReportWidth..kMaxReportWidth (COLUMNS=1000000000 must not make gigabytes of rulers).
int terminal_width(int requested) {
  if (requested > 0) return requested;
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return std::clamp<int>(ws.ws_col, kMinReportWidth, kMaxReportWidth);
  }
  if (const auto n = env::columns()) {
    return static_cast<int>(std::clamp<long long>(*n, kMinReportWidth, kMaxReportWidth));
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

}  // namespace

diff::Report diff_with_recorded_tokenizer(const trace::TraceReader& a, const trace::TraceReader& b,
                                          diff::DiffOptions opt, const std::string& tokenizer) {
  const DecodingTokenizer d = decoding_tokenizer(a, tokenizer);
  if (!d.note.empty()) print_note("note: {}\n", d.note);
  const std::shared_ptr<Tokenizer> tok = d.tokenizer;
  if (tok) opt.decode = [tok](const std::vector<int32_t>& ids) { return decode_shown(*tok, ids); };
  Progress progress("diff");
  opt.progress = [&](int done, int total) { progress.update_items(done, total, "sequences"); };
  diff::Report report = diff::diff_traces(a, b, opt);
  progress.done();
  return report;
}

trace::FloorFile read_checked_floor(const std::string& floor_path, const trace::TraceReader& a) {
  trace::FloorFile f = trace::read_floor(floor_path);
  diff::check_floor(f, floor_path, a);
  return f;
}

void judge_against_floor(diff::Report& report, const trace::FloorFile& floor,
                         const std::string& floor_path, double alpha) {
  report.noise = diff::evaluate_floor(report, floor, floor_path, alpha);
}

void print_terminal_report(const diff::Report& report, const ReportStyle& s) {
  viewer::TerminalOptions t;
  t.width = terminal_width(s.width);
  t.color = use_color(s.color);
  t.max_pages = s.pages;
  t.sites = s.sites;
  fmt::print("{}", viewer::render_terminal(report, t));
}

void write_json_report(const diff::Report& report, const std::string& path) {
  write_json_text(viewer::render_json(report), path);
}

void write_json_text(const std::string& text, const std::string& path) {
  if (path == "-") {
    write_stdout(text);
    return;
  }
  write_report_file(text, path, "JSON report", "; or use --json - for stdout");
}

void write_html_report(const diff::Report& report, const std::string& path) {
  write_html_text(viewer::render_html(report), path);
}

void write_html_text(const std::string& text, const std::string& path) {
  if (path == "-") {
    write_stdout(text);
    return;
  }
  write_report_file(text, path, "HTML report", "; or use --html - for stdout");
}

}  // namespace ds
