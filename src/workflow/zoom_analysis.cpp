// Per-sequence diff and attribution of a zoom's replays, and their aggregate.
#include "src/workflow/zoom_analysis.h"

#include <fmt/format.h>

#include <map>

#include "common/error.h"
#include "diff/attribution.h"
#include "src/console/output.h"
#include "src/console/progress.h"
#include "src/workflow/attribution_report.h"
#include "src/workflow/diff_report.h"
#include "src/workflow/report_file.h"
#include "viewer/attribution_json.h"
#include "viewer/attribution_terminal.h"
#include "viewer/diff_json.h"
#include "viewer/diff_terminal.h"

namespace ds {
namespace {

std::filesystem::path seq_dir(const std::filesystem::path& dir, int seq) {
  return dir / fmt::format("seq-{}", seq);
}

void write_in(const std::filesystem::path& path, const std::string& text) {
  write_report_file(text, path.string(), "zoom report",
                    "check that -o names a writable folder and the disk is not full");
}

// Whether B's replay, on A's tokens, still prefers another token than A's at the flip.
bool flip_reproduced(const trace::TraceReader& b2, int replay_index, const diff::FirstFlip& f) {
  const trace::TopKRows top = b2.topk(replay_index, f.row, 1);
  return top.k > 0 && !top.ids.empty() && top.ids[0] != f.token_a;
}

// The diff of A' and B' for one zoomed sequence, named by its index in A and B, with the first
// flip of the original runs (the replays consume A's tokens, so they cannot flip themselves).
diff::Report pair_diff(const trace::TraceReader& a2, const trace::TraceReader& b2, const ZoomSeq& z,
                       const diff::Report& original) {
  diff::DiffOptions opt;
  opt.sequences = {z.replay_index};
  diff::Report r = diff_with_recorded_tokenizer(a2, b2, opt);
  diff::SequenceReport& s = r.sequences.front();
  s.index = z.seq;
  for (const auto& o : original.sequences) {
    if (o.index != z.seq || !o.first_flip) continue;
    s.first_flip = o.first_flip;
    s.verdict = diff::Verdict::flip;
    r.summary.diverged = 1;
    r.summary.div_percent = 100;
    s.notes.push_back(fmt::format(
        "zoom: first flip at step {} as in the original runs ({} vs {}); both replays consume "
        "A's tokens; B's replay {} it (its top-1 at that row {} A's token)",
        o.first_flip->step, original.a.path, original.b.path,
        flip_reproduced(b2, z.replay_index, *o.first_flip) ? "reproduces" : "does NOT reproduce",
        flip_reproduced(b2, z.replay_index, *o.first_flip) ? "differs from" : "is"));
  }
  return r;
}

}  // namespace

ZoomAnalysis analyse_zoom(const std::filesystem::path& dir, const ZoomPlan& plan,
                          const diff::Report& original, bool quiet) {
  const auto a2 = trace::TraceReader::open(dir / "a.h5");
  const auto b2 = trace::TraceReader::open(dir / "b.h5");
  std::vector<diff::Report> diffs;
  for (const auto& z : plan.seqs) {
    diffs.push_back(pair_diff(a2, b2, z, original));
    std::filesystem::create_directories(seq_dir(dir, z.seq));
    write_in(seq_dir(dir, z.seq) / "diff.json", viewer::render_json(diffs.back()));
    viewer::TerminalOptions t;
    t.max_pages = 1;
    write_in(seq_dir(dir, z.seq) / "diff.txt", viewer::render_terminal(diffs.back(), t));
  }
  std::vector<diff::AttributionReport> attributions;
  if (!plan.side_b.recorder && plan.side_b.config.device == Device::cpu) {
    ModelArgs ma;
    ma.model = plan.model;
    ma.tokenizer = plan.tokenizer;
    LoadedModel lm = load_model_and_prompt(ma, /*need_tokenizer=*/false, /*want_prompt=*/false);
    check_attribution_model(a2, lm);
    std::vector<std::vector<int>> groups;
    for (const auto& z : plan.seqs) groups.push_back({z.replay_index});
    Progress progress("zoom: attribute");
    attributions = attribute_groups(lm, a2, plan.side_b.config, groups, [&](int seq, int n) {
      if (!quiet) progress.update_items(seq + 1, n, "sequences");
    });
    progress.done();
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      const auto d = seq_dir(dir, plan.seqs[i].seq);
      write_in(d / "attribution.json", viewer::render_attribution_json(attributions[i]));
      write_in(d / "attribution.txt", viewer::render_attribution_terminal(attributions[i], 100));
    }
  } else if (!quiet && plan.side_b.recorder) {
    print_note(
        "zoom: no attribution (B was recorded by {}; attribute runs B's configuration in "
        "driftscope, on the CPU)\n",
        plan.side_b.recorder->engine);
  } else if (!quiet) {
    print_note("zoom: no attribution (B runs on {}; attribute runs on the CPU only)\n",
               field_text(plan.side_b.config, "device"));
  }
  return {std::move(diffs), std::move(attributions)};
}

}  // namespace ds
