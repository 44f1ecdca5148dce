// Tap hook -> trace writer.
#include "src/experiment/trace_recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "common/error.h"
#include "trace/schema.h"

namespace ds {

std::vector<std::string> resolve_probes(const std::string& spec, int n_layers) {
  if (spec == "default") return trace::default_sites(n_layers);
  if (spec == "all") return trace::all_sites(n_layers);
  if (spec == "none") return {};
  const std::vector<std::string> all = trace::all_sites(n_layers);
  std::set<std::string> chosen;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.starts_with("L*/")) {
      const std::string kind = item.substr(3);
      bool known = false;
      for (const char* k : trace::kLayerSiteKinds) known |= kind == k;
      if (!known) {
        throw Error(fmt::format("unknown probe '{}'", item),
                    "layer kinds: attn_norm, attn_out, resid_mid, mlp_norm, mlp_out, out");
      }
      for (int l = 0; l < n_layers; ++l) chosen.insert(trace::layer_site(l, kind));
    } else if (std::find(all.begin(), all.end(), item) != all.end()) {
      chosen.insert(item);
    } else {
      throw Error(
          fmt::format("unknown probe '{}' (the model has layers L0..L{})", item, n_layers - 1),
          "--probes takes default, all, none, or sites like embed,L0/attn_out,L*/out,"
          "final_norm");
    }
  }
  std::vector<std::string> out;
  for (const auto& s : all) {
    if (chosen.count(s)) out.push_back(s);  // forward order
  }
  return out;
}

namespace {

// Rows [r0, r1) of a tapped tensor into dst, converting to dst's element type.
template <typename D>
void copy_rows(const TapTensor& t, int r0, int r1, D* dst) {
  const size_t b = static_cast<size_t>(r0) * t.width, e = static_cast<size_t>(r1) * t.width;
  if (t.f32 != nullptr) {
    std::copy(t.f32 + b, t.f32 + e, dst);
  } else {
    std::transform(t.f64 + b, t.f64 + e, dst, [](double v) { return static_cast<D>(v); });
  }
}

// f(r0, r1) for the rows [r0, r1) of each sequence among `rows` rows of a pass (rows of one
// sequence are contiguous).
template <typename F>
void for_each_sequence(const int* slot, int rows, F&& f) {
  for (int r0 = 0; r0 < rows;) {
    int r1 = r0 + 1;
    while (r1 < rows && slot[r1] == slot[r0]) ++r1;
    f(r0, r1);
    r0 = r1;
  }
}

}  // namespace

TraceRecorder::TraceRecorder(trace::TraceWriter& writer, const std::vector<std::string>& sites)
    : writer_(writer), sites_(sites.begin(), sites.end()) {}

bool TraceRecorder::wants(const Site& site) {
  return site.kind == SiteKind::logits || sites_.count(site_name(site)) != 0;
}

trace::StepRecord& TraceRecorder::step_of(const int* slot, int r0) {
  auto bound = slot_seq_.find(slot[r0]);
  if (bound == slot_seq_.end()) {
    throw Error(fmt::format("trace recorder: KV-cache slot {} is bound to no sequence", slot[r0]));
  }
  trace::StepRecord& step = pending_[bound->second];
  step.seq = bound->second;
  return step;
}

int TraceRecorder::logits_summary_k() const {
  return writer_.options().full_logits ? 0 : writer_.options().topk;
}

void TraceRecorder::on_logits(const LogitsSummary& l) {
  for_each_sequence(l.slot, l.rows, [&](int r0, int r1) {
    trace::StepRecord& step = step_of(l.slot, r0);
    step.vocab = l.vocab;
    const size_t b = static_cast<size_t>(r0) * l.k, e = static_cast<size_t>(r1) * l.k;
    step.topk_ids.insert(step.topk_ids.end(), l.ids + b, l.ids + e);
    step.topk_logits.insert(step.topk_logits.end(), l.logits + b, l.logits + e);
    step.lse.insert(step.lse.end(), l.lse + r0, l.lse + r1);
    step.n_rows += r1 - r0;
  });
}

void TraceRecorder::on_tap(const Site& site, const TapTensor& t) {
  const bool logits = site.kind == SiteKind::logits;
  const std::string name = logits ? std::string() : site_name(site);
  for_each_sequence(t.slot, t.rows, [&](int r0, int r1) {
    trace::StepRecord& step = step_of(t.slot, r0);
    const size_t n = static_cast<size_t>(r1 - r0) * t.width;
    if (logits) {
      step.vocab = t.width;
      step.logits.resize(step.logits.size() + n);
      copy_rows(t, r0, r1, step.logits.data() + step.logits.size() - n);
      step.n_rows += r1 - r0;
    } else {
      auto h = std::find_if(step.hidden.begin(), step.hidden.end(),
                            [&](const trace::HiddenRows& x) { return x.site == name; });
      if (h == step.hidden.end()) {
        step.hidden.push_back({name, t.width, {}});
        h = step.hidden.end() - 1;
      }
      h->values.resize(h->values.size() + n);
      copy_rows(t, r0, r1, h->values.data() + h->values.size() - n);  // fp64 rounds to float32
    }
  });
}

void TraceRecorder::commit(int seq, std::vector<int32_t> new_tokens) {
  auto it = pending_.find(seq);
  if (it == pending_.end()) return;
  trace::StepRecord step = std::move(it->second);
  pending_.erase(it);
  step.new_tokens = std::move(new_tokens);
  writer_.append(std::move(step));
}

}  // namespace ds
