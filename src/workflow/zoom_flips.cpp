// The aggregate of a zoom's flips (diff/flip_aggregate.h) on stdout and in DIR/flips.*.
#include "src/workflow/zoom_flips.h"

#include <fmt/format.h>

#include "diff/flip_aggregate.h"
#include "src/console/output.h"
#include "src/workflow/report_file.h"
#include "viewer/flips_html.h"
#include "viewer/flips_json.h"
#include "viewer/flips_terminal.h"

namespace ds {
namespace {

// ": cause {dtype} at L3/down_proj" for a flip that explain explained, else "".
std::string cause_of(const diff::ExplainReport& r, int seq) {
  for (const auto& f : r.flips) {
    if (f.seq != seq) continue;
    if (f.knob_sets.empty())
      return fmt::format(" ({})",
                         f.verdict == "no_cause" ? "no cause among the knobs" : "unresolved");
    return fmt::format(" (cause {}{})", diff::knob_set_text(f.knob_sets.front()),
                       f.ops.ops.empty() ? "" : " at " + f.ops.ops.front());
  }
  return "";
}

}  // namespace

void write_zoom_flips(const std::filesystem::path& dir, const ZoomPlan& plan,
                      const std::vector<diff::Report>& diffs,
                      const std::vector<diff::AttributionReport>& attributions,
                      const diff::ExplainReport* explained, bool quiet) {
  if (attributions.size() != plan.seqs.size()) {
    // B not on the CPU: no attribution, and the aggregate would leave every pair out ("no
    // flips"); the flips themselves, one line each, and no DIR/flips.*
    std::string text;
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      text += fmt::format("seq {}: {}{}\n", plan.seqs[i].seq,
                          diff::verdict_text(diffs[i].sequences.front()),
                          explained ? cause_of(*explained, plan.seqs[i].seq) : "");
    }
    write_stdout(text);
    if (!quiet) {
      print_note(
          "zoom: no aggregate of the flips (it needs the attributions); per-sequence "
          "reports in {}/seq-*/\n",
          dir.string());
    }
    return;
  }
  std::vector<diff::ZoomedPair> pairs;
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    pairs.push_back({&diffs[i], &attributions[i], plan.seqs[i].seq});
  }
  const diff::FlipAggregate agg = diff::aggregate_flips(pairs);
  const std::string text = viewer::render_flips_terminal(agg, 100, explained);
  const char* hint = "check that -o names a writable folder and the disk is not full";
  write_report_file(text, (dir / "flips.txt").string(), "zoom report", hint);
  write_report_file(viewer::flips_json(agg, explained).dump(2) + "\n",
                    (dir / "flips.json").string(), "zoom report", hint);
  write_report_file(viewer::flips_html(agg, explained), (dir / "flips.html").string(),
                    "zoom report", hint);
  write_stdout(text);
  if (!quiet) {
    print_note(
        "zoom: the flips in aggregate in {}/flips.{{txt,json,html}}, per sequence in "
        "{}/seq-*/\n",
        dir.string(), dir.string());
  }
}

}  // namespace ds
