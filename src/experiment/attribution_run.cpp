// B teacher-forced on A's tokens with shadow layers; taps paired with A's rows.
#include "src/experiment/attribution_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "common/error.h"
#include "src/experiment/generate.h"
#include "src/runtime/runtime.h"
#include "trace/schema.h"

namespace ds {

std::vector<Prompt> forced_prompts(const trace::TraceReader& r) {
  std::vector<Prompt> out;
  for (int i : r.sequence_indices()) {
    const auto s = r.sequence(i);
    if (i != static_cast<int>(out.size())) {
      throw Error(fmt::format("trace '{}' has no sequence {}", r.path().string(), out.size()),
                  "teacher forcing consumes every sequence of a trace: give a whole trace");
    }
    Prompt p;
    p.ids.assign(s.tokens.begin(), s.tokens.begin() + s.prompt_len);
    p.forced = std::vector<int32_t>(s.tokens.begin() + s.prompt_len, s.tokens.end());
    out.push_back(std::move(p));
  }
  if (out.empty()) {
    throw Error(fmt::format("trace '{}' holds no sequence", r.path().string()),
                "give a trace that recorded at least one sequence");
  }
  return out;
}

std::vector<std::string> attribution_needed_sites(int n_layers) {
  std::vector<std::string> s{trace::kEmbedSite};
  for (int l = 0; l < n_layers; ++l) s.push_back(trace::layer_site(l, trace::SiteKind::out));
  s.push_back(trace::kFinalNormSite);
  return s;
}

void check_attribution_device(const RunConfig& c) {
  if (c.device != Device::cpu) {
    throw Error(
        "attribute runs on --device cpu only: the CUDA backend hands its taps over at the "
        "end of a pass, too late to replay a layer inside it",
        "drop --device cuda (the CPU backend emulates the GPU numerics knobs)");
  }
}

namespace {

// The shadow source and B's tap hook in one: A's rows per (sequence, site), read whole per
// sequence on first use and dropped after each group of co-batched sequences.
class Pairing final : public ShadowSource, public TapHook {
 public:
  Pairing(const trace::TraceReader& a, const PairSink& sink, bool split_mlp)
      : a_(a), sink_(sink), split_mlp_(split_mlp) {}

  void bind_slot(int slot, int seq) { slot_seq_[slot] = seq; }
  void clear() { cache_.clear(); }

  bool wants(ShadowKind kind, int /*layer*/) override {
    return kind != ShadowKind::mlp || split_mlp_;
  }
  bool wants(const Site& s) override {
    switch (s.kind) {
      case SiteKind::out:
      case SiteKind::final_norm:
      case SiteKind::logits:
        return true;
      case SiteKind::resid_mid:
        return split_mlp_;
      default:
        return false;
    }
  }

  void reference_rows(const Site& site, const int* slot, const int* pos, int rows, int width,
                      float* out) override {
    const std::string name = site_name(site);
    for (int r = 0; r < rows; ++r) {
      const std::vector<float>& a = rows_of(seq_of(slot[r]), name, width);
      const size_t at = static_cast<size_t>(pos[r]) * width;
      if (at + width > a.size()) {
        throw Error(fmt::format("trace '{}' has no row {} of '{}' in sequence {}",
                                a_.path().string(), pos[r], name, seq_of(slot[r])),
                    "record the reference with run (complete, every position)");
      }
      std::copy(a.begin() + at, a.begin() + at + width, out + static_cast<size_t>(r) * width);
    }
  }

  void on_shadow_tap(ShadowKind kind, const Site& site, const TapTensor& t) override {
    if (!keeps(kind, site)) return;
    hand_over(kind, site, t);
  }
  void on_tap(const Site& site, const TapTensor& t) override { hand_over(std::nullopt, site, t); }

 private:
  // The shadow sites compared: a layer shadow's resid_mid (with the MLP split) and out; an MLP
  // shadow's out; the head's final_norm and logits.
  bool keeps(ShadowKind kind, const Site& s) const {
    switch (kind) {
      case ShadowKind::layer:
        return s.kind == SiteKind::out || (split_mlp_ && s.kind == SiteKind::resid_mid);
      case ShadowKind::mlp:
        return s.kind == SiteKind::out;
      case ShadowKind::head:
        return s.kind == SiteKind::final_norm || s.kind == SiteKind::logits;
    }
    return false;
  }

  int seq_of(int slot) const {
    auto it = slot_seq_.find(slot);
    if (it == slot_seq_.end())
      throw Error(fmt::format("attribute: slot {} bound to no sequence", slot));
    return it->second;
  }

  const std::vector<float>& rows_of(int seq, const std::string& site, int width) {
    auto key = std::make_pair(seq, site);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      const int64_t rows = a_.sequence(seq).rows;
      it = cache_.emplace(key, a_.hidden(seq, site, 0, rows)).first;
      if (it->second.size() != static_cast<size_t>(rows) * width) {
        throw Error(
            fmt::format("trace '{}': site '{}' is not {} wide", a_.path().string(), site, width),
            "the reference must be a trace of the same model");
      }
    }
    return it->second;
  }

  void hand_over(std::optional<ShadowKind> kind, const Site& site, const TapTensor& t) {
    const bool logits = site.kind == SiteKind::logits;
    const std::string name = site_name(site);
    for (int r0 = 0; r0 < t.rows;) {  // rows of one sequence are contiguous
      int r1 = r0 + 1;
      while (r1 < t.rows && t.slot[r1] == t.slot[r0]) ++r1;
      const size_t n = static_cast<size_t>(r1 - r0) * t.width;
      b_.resize(n);
      const size_t from = static_cast<size_t>(r0) * t.width;
      if (t.f32 != nullptr) {
        std::copy(t.f32 + from, t.f32 + from + n, b_.begin());
      } else {
        std::transform(t.f64 + from, t.f64 + from + n, b_.begin(),
                       [](double v) { return static_cast<float>(v); });
      }
      PairedRows p;
      p.seq = seq_of(t.slot[r0]);
      p.site = name;
      p.shadow = kind;
      p.first_pos = t.pos[r0];
      p.rows = r1 - r0;
      p.width = t.width;
      p.b = b_.data();
      if (!logits) {
        const std::vector<float>& a = rows_of(p.seq, name, t.width);
        const size_t at = static_cast<size_t>(p.first_pos) * t.width;
        if (at + n > a.size()) {
          throw Error(fmt::format("trace '{}' has fewer rows of '{}' in sequence {} than B ran",
                                  a_.path().string(), name, p.seq));
        }
        p.a = a.data() + at;
      }
      sink_(p);
      r0 = r1;
    }
  }

  const trace::TraceReader& a_;
  const PairSink& sink_;
  bool split_mlp_;
  std::map<int, int> slot_seq_;
  std::map<std::pair<int, std::string>, std::vector<float>> cache_;
  std::vector<float> b_;
};

}  // namespace

void run_attribution(const Model& model, const trace::TraceReader& a,
                     const AttributionRunOptions& opt, const PairSink& sink) {
  const RunConfig& rc = opt.config;
  check_attribution_device(rc);
  validate(rc);
  validate_for_model(rc, model.config);
  const ModelConfig& c = model.config;
  const std::vector<Prompt> prompts = forced_prompts(a);
  // A must hold the needed sites, in float32, in every sequence
  std::vector<std::string> needed = attribution_needed_sites(c.n_layers);
  if (opt.split_mlp) {
    for (int l = 0; l < c.n_layers; ++l)
      needed.push_back(trace::layer_site(l, trace::SiteKind::resid_mid));
  }
  for (int seq : a.sequence_indices()) {
    const trace::SequenceInfo s = a.sequence(seq);
    for (const auto& want : needed) {
      auto it = std::find_if(s.sites.begin(), s.sites.end(),
                             [&](const trace::SiteInfo& x) { return x.name == want; });
      if (it == s.sites.end()) {
        throw Error(fmt::format("trace '{}' has no '{}' in sequence {}: attribute replays each "
                                "layer on the reference's recorded input and compares its output",
                                a.path().string(), want, seq),
                    "record the reference with run --probes 'embed,L*/out,final_norm' (add "
                    "L*/resid_mid, or use --probes all, to split attention from MLP)");
      }
      if (it->elem != NumberFormat::f32) {
        throw Error(fmt::format("trace '{}' stores '{}' in reduced precision: replaying a layer "
                                "on rounded inputs would add error that is not the layer's",
                                a.path().string(), want),
                    "record the reference with run --hidden-dtype f32 (the default)");
      }
    }
    if (s.topk < 1) {
      throw Error(fmt::format("trace '{}' has no logits in sequence {}", a.path().string(), seq),
                  "record the reference with driftscope run");
    }
  }
  int longest = 0;
  for (const auto& p : prompts) {
    check_token_ids(p.ids, c.vocab_size);
    check_token_ids(*p.forced, c.vocab_size);
    longest = std::max(longest, static_cast<int>(p.ids.size() + p.forced->size()));
  }
  const int batch = std::min<int>(rc.batch, static_cast<int>(prompts.size()));
  auto rt = make_configured_runtime(model, rc, needed_capacity(longest, 0, c.max_seq_len), batch);
  Pairing pairing(a, sink, opt.split_mlp);
  rt->set_tap_hook(&pairing);
  rt->set_shadow_source(&pairing);
  GenerateOptions g;
  g.max_new = 0;  // every sequence is forced
  g.sampling = rc.sampling();
  g.prefill_chunk = rc.prefill_chunk;
  g.prefix_cache = rc.prefix_cache;
  for (size_t first = 0; first < prompts.size(); first += batch) {
    const size_t last = std::min(prompts.size(), first + batch);
    std::vector<SequenceRequest> group;
    for (size_t i = first; i < last; ++i) {
      pairing.bind_slot(static_cast<int>(i - first), static_cast<int>(i));
      group.push_back({prompts[i].ids, i, prompts[i].forced});
    }
    generate_batch(*rt, group, g);
    pairing.clear();
    if (opt.progress) opt.progress(static_cast<int>(last), static_cast<int>(prompts.size()));
  }
}

}  // namespace ds
