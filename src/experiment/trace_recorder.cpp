// Tap hook -> trace writer.
#include "src/experiment/trace_recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
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

// Rows [r0, r1) of a tapped tensor appended to dst, converted to dst's element type (fp64 to
// float32 rounds).
template <typename D>
void append_rows(const TapTensor& t, int r0, int r1, std::vector<D>& dst) {
  const size_t b = static_cast<size_t>(r0) * t.width, e = static_cast<size_t>(r1) * t.width;
  if (t.f32 != nullptr) {
    dst.insert(dst.end(), t.f32 + b, t.f32 + e);
  } else {
    dst.reserve(dst.size() + (e - b));
    std::transform(t.f64 + b, t.f64 + e, std::back_inserter(dst),
                   [](double v) { return static_cast<D>(v); });
  }
}

// A dense key of a site: its kind, and its layer for the per-layer kinds.
size_t site_key(const Site& s) {
  constexpr size_t kinds = static_cast<size_t>(SiteKind::logits) + 1;
  const int k = layer_site_index(s.kind);
  const bool in_layer = k >= 0 && k < kLayerSiteCount;
  return static_cast<size_t>(s.kind) + (in_layer ? (static_cast<size_t>(s.layer) + 1) * kinds : 0);
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

TraceRecorder::Pending& TraceRecorder::step_of(const int* slot, int r0) {
  auto bound = slot_seq_.find(slot[r0]);
  if (bound == slot_seq_.end()) {
    throw Error(fmt::format("trace recorder: KV-cache slot {} is bound to no sequence", slot[r0]));
  }
  Pending& p = pending_[bound->second];
  p.step.seq = bound->second;
  return p;
}

int TraceRecorder::site_number(const Site& site) {
  const size_t key = site_key(site);
  if (key >= number_of_.size()) number_of_.resize(key + 1, -1);
  if (number_of_[key] < 0) {
    const std::string name = site_name(site);
    const auto known = std::find(names_.begin(), names_.end(), name);
    number_of_[key] = static_cast<int>(known - names_.begin());
    if (known == names_.end()) names_.push_back(name);
  }
  return number_of_[key];
}

int TraceRecorder::logits_summary_k() const {
  return writer_.options().full_logits ? 0 : writer_.options().topk;
}

void TraceRecorder::on_logits(const LogitsSummary& l) {
  for_each_sequence(l.slot, l.rows, [&](int r0, int r1) {
    trace::StepRecord& step = step_of(l.slot, r0).step;
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
  const int number = logits ? -1 : site_number(site);
  for_each_sequence(t.slot, t.rows, [&](int r0, int r1) {
    Pending& p = step_of(t.slot, r0);
    trace::StepRecord& step = p.step;
    if (logits) {
      step.vocab = t.width;
      append_rows(t, r0, r1, step.logits);
      step.n_rows += r1 - r0;
      return;
    }
    if (p.hidden_at.size() < names_.size()) p.hidden_at.resize(names_.size(), -1);
    int& at = p.hidden_at[number];
    if (at < 0) {
      if (step.hidden.empty()) step.hidden.reserve(std::max(sites_.size(), names_.size()));
      at = static_cast<int>(step.hidden.size());
      step.hidden.push_back({names_[number], t.width, {}});
    }
    append_rows(t, r0, r1, step.hidden[at].values);  // fp64 rounds to float32
  });
}

void TraceRecorder::commit(int seq, std::vector<int32_t> new_tokens) {
  auto it = pending_.find(seq);
  if (it == pending_.end()) return;
  trace::StepRecord step = std::move(it->second.step);
  pending_.erase(it);
  step.new_tokens = std::move(new_tokens);
  writer_.append(std::move(step));
}

}  // namespace ds
