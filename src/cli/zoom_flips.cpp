// The aggregate of a zoom's flips (until diff/flip_aggregate lands: the per-sequence list).
#include "src/cli/zoom_flips.h"

#include <fmt/format.h>

#include "src/cli/output.h"

namespace ds {

void write_zoom_flips(const std::filesystem::path& dir, const ZoomPlan& plan,
                      const std::vector<diff::Report>& diffs,
                      const std::vector<diff::AttributionReport>& attributions, bool quiet) {
  (void)attributions;
  std::string text;
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const auto& s = diffs[i].sequences.front();
    text += fmt::format("seq {}: {}\n", plan.seqs[i].seq, diff::verdict_text(s));
  }
  write_stdout(text);
  if (!quiet) print_note("zoom: per-sequence reports in {}/seq-*/\n", dir.string());
}

}  // namespace ds
