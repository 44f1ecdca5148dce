// Connects the runtime's tap hook to the trace writer: copies each wanted tensor's rows per
// sequence, and hands a finished step (rows + the token chosen after it) to the writer.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/runtime/taps.h"
#include "trace/writer.h"

namespace ds {

// The hidden sites a --probes value selects for a model of n_layers layers:
// "default", "all", "none", or a comma-separated list of site names ("embed,L0/out,final_norm");
// "L*/<kind>" selects that kind in every layer. Throws ds::Error naming an unknown site.
std::vector<std::string> resolve_probes(const std::string& spec, int n_layers);

class TraceRecorder final : public TapHook {
 public:
  TraceRecorder(trace::TraceWriter& writer, const std::vector<std::string>& sites);

  bool wants(const Site& site) override;
  void on_tap(const Site& site, const TapTensor& t) override;
  // The writer's top-k, unless it stores whole logits rows (--full-logits).
  int logits_summary_k() const override;
  void on_logits(const LogitsSummary& summary) override;

  // Rows of KV-cache slot `slot` belong to trace sequence `seq` from now on.
  void bind_slot(int slot, int seq) { slot_seq_[slot] = seq; }

  // The forward pass for `seq` is done and `new_tokens` were chosen from its last logits row:
  // queue the step to the writer.
  void commit(int seq, std::vector<int32_t> new_tokens);

 private:
  // A step being filled, and where each hidden site's rows are in it: hidden_at[i] is the
  // position in step.hidden of the site numbered i (site_number), -1 before its first rows.
  struct Pending {
    trace::StepRecord step;
    std::vector<int> hidden_at;
  };
  // The pending step of the sequence whose rows start at rows[r0] (a step's rows may come in
  // several passes, e.g. a chunked prefill: what a pass brings is appended).
  Pending& step_of(const int* slot, int r0);
  // The number of a hidden site (its name is names_[number]), given on its first tap: a tap
  // costs no name and no search among the step's sites.
  int site_number(const Site& site);

  trace::TraceWriter& writer_;
  std::set<std::string> sites_;
  std::map<int, int> slot_seq_;     // KV-cache slot -> trace sequence
  std::map<int, Pending> pending_;  // by sequence
  std::vector<std::string> names_;  // hidden site names by number
  std::vector<int> number_of_;      // site_key(site) -> its number, -1 before its first tap
};

}  // namespace ds
