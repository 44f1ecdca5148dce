// The diff of one sequence of two traces: alignment, the logits metrics and every common hidden
// site's drift, in the steps diff_traces (diff/diff.cpp) runs on its threads. Internal to diff/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "diff/diff.h"
#include "diff/metrics.h"
#include "diff/report.h"
#include "trace/reader.h"

namespace ds::diff {

// -1 for embed, l for "L<l>/...", n_layers for final_norm and any other name (the schema's
// site_order parses the name).
int site_layer(const std::string& site, int n_layers);

// One sequence of both traces, in three steps. prepare() runs on the readers' thread (every HDF5
// call is there): the sequences' datasets, alignment, logits, and the hidden sites to compare,
// each located for reads with no HDF5 call when the traces allow (TraceReader::plain_hidden).
// compare_hidden() then runs on any thread when hidden_on_any_thread() (else on the readers'),
// and finish() gives the report and the parts skipped, in the order they were found.
class SequenceDiff {
 public:
  SequenceDiff(const trace::TraceReader& a, const trace::TraceReader& b, int index,
               const DiffOptions& opt, int n_layers);

  void prepare();

  // Whether compare_hidden() makes no HDF5 call (every common site located by prepare()) and has
  // sites to measure.
  bool hidden_on_any_thread() const { return located_ && !common_.empty(); }

  void compare_hidden();

  SequenceReport finish(std::vector<Skipped>& skipped);

 private:
  // A site of both traces, with its rows located in each when prepare() could.
  struct CommonSite {
    const trace::SiteInfo* a;
    const trace::SiteInfo* b;
    std::optional<trace::PlainHidden> plain_a, plain_b;
  };

  void align();
  void skip(const std::string& what, const Error& e);
  void compare_logits();
  void compare_logits_rows();
  struct LogitsBlock;  // one block of logits rows of both traces
  // Running sums of the logits metrics over the compared rows.
  struct LogitsSums {
    double sum_sq = 0, sum_j = 0, sum_kl = 0;
  };
  int64_t logits_width();
  LogitsBlock read_logits_block(int64_t begin, int64_t rows);
  void measure_logits_row(const LogitsBlock& k, int64_t r, double kl, LogitsSums& sums);
  void add_margin_row(const LogitsRow& ra, const LogitsRow& rb, int64_t row, bool choice,
                      const PositionRow& p);
  void select_sites();
  void compare_site(const CommonSite& site);
  void classify();

  const trace::TraceReader& A_;
  const trace::TraceReader& B_;
  int idx_;
  const DiffOptions& opt_;
  int n_layers_;
  trace::SequenceInfo sa_, sb_;
  SequenceReport s_;
  std::vector<Skipped> skipped_;
  std::vector<CommonSite> common_;
  std::map<int, std::string> layer_site_;  // layer -> the site of the layer view
  bool located_ = false;
  std::vector<float> buf_a_, buf_b_;  // hidden rows of the current block, reused by every site
};

}  // namespace ds::diff
