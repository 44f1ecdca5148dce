// Pairwise diff of two traces: model and config checks, the sequences matched by index, each
// compared by SequenceDiff (pipelined over a worker thread), then the summary and kernels.
#include "diff/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <memory>
#include <system_error>

#include "common/error.h"
#include "diff/identity.h"
#include "diff/kernels.h"
#include "diff/sequence_diff.h"
#include "trace/certificate.h"

namespace ds::diff {
namespace {

// From the first sequence that can be read (a damaged one is skipped later, by name).
int layers_from_sites(const trace::TraceReader& r, const std::vector<int>& seqs) {
  int n = 0;
  for (int i : seqs) {
    try {
      for (const auto& site : r.sequence(i).sites) n = std::max(n, site_layer(site.name, -1) + 1);
      return n;
    } catch (const Error&) {
    }
  }
  return n;
}

// A's or B's side of the report: the file, how it was produced and how much it holds.
TraceSide trace_side(const trace::TraceReader& t, const ModelIdentity& m, size_t sequences) {
  TraceSide s;
  s.path = t.path().string();
  s.complete = t.complete();
  s.stop_reason = t.stop_reason();
  s.tool_version = t.tool_version();
  s.producer = t.producer();
  s.certify = trace::certify_verdict(t.certify_json());
  s.model_files = m.files;
  s.sequences = static_cast<int>(sequences);
  return s;
}

// Different models are an error unless allowed (then a warning); a trace without model file
// hashes is a warning.
void check_models(const ModelIdentity& ma, const ModelIdentity& mb, const DiffOptions& opt,
                  Report& rep) {
  rep.model_known = ma.known && mb.known;
  rep.model_equal = same_model(ma, mb);
  if (rep.model_known && !rep.model_equal) {
    const std::string what =
        fmt::format("A: {}; B: {}", fmt::join(ma.files, ", "), fmt::join(mb.files, ", "));
    if (!opt.allow_model_mismatch) {
      throw Error("the traces are of different models (" + what + ")",
                  "diff compares runs of the same model; pass --allow-model-mismatch to compare "
                  "them anyway");
    }
    rep.warnings.push_back("different models, compared anyway (--allow-model-mismatch): " + what);
  }
  if (!ma.known || !mb.known) {
    rep.warnings.push_back(
        fmt::format("{} no model file hashes: cannot check that both traces are of the same model",
                    !ma.known && !mb.known ? "neither trace records"
                    : !ma.known            ? "A records"
                                           : "B records"));
  }
}

// The run-config and tokenizer differences, and a warning for each incomplete trace.
void check_configs(const trace::TraceReader& a, const trace::TraceReader& b,
                   const ModelIdentity& ma, const ModelIdentity& mb, Report& rep) {
  rep.config_diff = config_differences(a.config_json(), b.config_json());
  // two runs that tokenized differently (file or BOS/EOS policy) are flagged like config
  for (auto& d : tokenizer_differences(ma, mb)) rep.config_diff.push_back(std::move(d));
  for (const auto* s : {&rep.a, &rep.b}) {
    if (!s->complete) {
      rep.warnings.push_back(fmt::format(
          "{} is incomplete (complete=0, stop: {}): compared over the positions it holds",
          s == &rep.a ? "A" : "B", s->stop_reason.empty() ? "?" : s->stop_reason));
    }
  }
}

// The sequences to compare: every one both traces hold (those of one trace only are named in the
// report), or the requested ones, each once, in order; a requested one not in both throws.
std::vector<int> select_sequences(const std::vector<int>& ia, const std::vector<int>& ib,
                                  const DiffOptions& opt, Report& rep) {
  std::vector<int> common;
  std::set_intersection(ia.begin(), ia.end(), ib.begin(), ib.end(), std::back_inserter(common));
  std::set_difference(ia.begin(), ia.end(), ib.begin(), ib.end(),
                      std::back_inserter(rep.only_in_a));
  std::set_difference(ib.begin(), ib.end(), ia.begin(), ia.end(),
                      std::back_inserter(rep.only_in_b));
  if (!rep.only_in_a.empty() || !rep.only_in_b.empty()) {
    rep.warnings.push_back(
        fmt::format("A holds {} sequences and B {}: {} compared (matched by index)", ia.size(),
                    ib.size(), common.size()));
  }
  std::vector<int> selected = common;
  if (!opt.sequences.empty()) {
    selected.clear();
    for (int i : opt.sequences) {
      if (!std::binary_search(common.begin(), common.end(), i)) {
        throw Error(fmt::format("sequence {} is not in both traces", i),
                    fmt::format("A holds {} sequences, B {}; sequences are numbered from 0",
                                ia.size(), ib.size()));
      }
      if (std::find(selected.begin(), selected.end(), i) == selected.end()) selected.push_back(i);
    }
    std::sort(selected.begin(), selected.end());
  }
  return selected;
}

// A sequence under comparison: its diff, and the worker measuring its hidden rows.
struct PendingSequence {
  std::unique_ptr<SequenceDiff> diff;  // null when the sequence could not be read
  std::future<void> hidden;            // declared after `diff`: destroyed (waited for) first
  Skipped failed;
};

// Sequence i prepared on this thread, its hidden rows measured on a worker when they need no
// HDF5 call (else here). A sequence that cannot be read in A or B (a damaged trace) is named and
// left out; the others are compared as usual.
PendingSequence start_sequence(const trace::TraceReader& a, const trace::TraceReader& b, int i,
                               const DiffOptions& opt, int n_layers) {
  PendingSequence p;
  try {
    p.diff = std::make_unique<SequenceDiff>(a, b, i, opt, n_layers);
    p.diff->prepare();
    bool started = false;
    if (p.diff->hidden_on_any_thread()) {
      try {
        p.hidden = std::async(std::launch::async, [d = p.diff.get()] { d->compare_hidden(); });
        started = true;
      } catch (const std::system_error&) {  // no thread to be had: measured here instead
      }
    }
    if (!started) p.diff->compare_hidden();
  } catch (const Error& e) {
    p.diff.reset();
    p.failed = {i, "sequence", e.what()};
  }
  return p;
}

// Every selected sequence compared into rep.sequences (or named in rep.skipped), pipelined: while
// a worker measures one sequence's hidden rows (no HDF5 call), this thread opens and checks the
// next sequence's datasets. Results are taken in sequence order.
void compare_sequences(const trace::TraceReader& a, const trace::TraceReader& b,
                       const std::vector<int>& selected, const DiffOptions& opt, int n_layers,
                       Report& rep) {
  int done = 0;
  auto take = [&](PendingSequence& p) {
    if (p.hidden.valid()) p.hidden.get();
    if (p.diff) {
      rep.sequences.push_back(p.diff->finish(rep.skipped));
    } else {
      rep.skipped.push_back(std::move(p.failed));
    }
    if (opt.progress) opt.progress(++done, static_cast<int>(selected.size()));
  };
  std::unique_ptr<PendingSequence> previous;
  for (int i : selected) {
    PendingSequence p = start_sequence(a, b, i, opt, n_layers);
    if (previous) {
      take(*previous);
      previous.reset();  // its worker has finished (take waited): freed before it is replaced
    }
    previous = std::make_unique<PendingSequence>(std::move(p));
  }
  if (previous) take(*previous);
}

// The parts skipped as warnings, and the counts of the summary.
void summarize(Report& rep) {
  for (const auto& k : rep.skipped) {
    rep.warnings.push_back(fmt::format("seq {}: {} skipped: {}", k.seq, k.what, k.why));
  }
  Summary& s = rep.summary;
  s.sequences = static_cast<int>(rep.sequences.size());
  for (const auto& q : rep.sequences) {
    s.diverged += q.first_flip.has_value();
    s.prompts_differ += !q.prompt_equal;
    s.drifted += !q.hidden_identical || (q.has_logits && !q.logits.identical);
  }
  s.div_percent = s.sequences ? 100.0 * s.diverged / s.sequences : 0.0;
}

}  // namespace

Report diff_traces(const trace::TraceReader& a, const trace::TraceReader& b,
                   const DiffOptions& opt) {
  Report rep;
  const ModelIdentity ma = model_identity(a.model_json()), mb = model_identity(b.model_json());
  const auto ia = a.sequence_indices(), ib = b.sequence_indices();
  rep.a = trace_side(a, ma, ia.size());
  rep.b = trace_side(b, mb, ib.size());
  check_models(ma, mb, opt, rep);
  check_configs(a, b, ma, mb, rep);
  const std::vector<int> selected = select_sequences(ia, ib, opt, rep);
  const int n_layers = ma.n_layers > 0 ? ma.n_layers : layers_from_sites(a, selected);
  compare_sequences(a, b, selected, opt, n_layers, rep);
  summarize(rep);
  rep.kernels = diff_kernels(a, b, rep.sequences, rep.warnings);
  return rep;
}

}  // namespace ds::diff
