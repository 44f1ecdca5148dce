// The diff report as JSON, field for field from the report struct.
#include "viewer/diff_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace ds::viewer {
namespace {

using J = nlohmann::ordered_json;

J num(double x) {
  return std::isfinite(x) ? J(x) : J(nullptr);
}

J raw_value(const std::string& text) {
  if (text.empty()) return nullptr;
  J v = J::parse(text, nullptr, false);
  return v.is_discarded() ? J(text) : v;
}

J top5(const std::vector<diff::TokenProb>& t) {
  J a = J::array();
  for (const auto& p : t) a.push_back(J::array({p.id, num(p.prob)}));
  return a;
}

J top5_tokens(const std::vector<diff::TokenProb>& t) {
  J a = J::array();
  for (const auto& p : t) {
    a.push_back({{"id", p.id}, {"prob", num(p.prob)}, {"logit", num(p.logit)}, {"text", p.text}});
  }
  return a;
}

J prompt_diff(const diff::SequenceReport& s) {
  if (!s.prompt_diff) return nullptr;
  const auto& p = *s.prompt_diff;
  return {{"first_index", p.first_index},
          {"prompt_a", p.prompt_a},
          {"prompt_b", p.prompt_b},
          {"text_a", p.text_a},
          {"text_b", p.text_b}};
}

J first_flip(const diff::SequenceReport& s) {
  if (!s.first_flip) return nullptr;
  const auto& f = *s.first_flip;
  return {{"step", f.step},
          {"position", f.position},
          {"row", f.row},
          {"token_a", f.token_a},
          {"token_b", f.token_b},
          {"text_a", f.text_a},
          {"text_b", f.text_b},
          {"top5_a", top5(f.top5_a)},
          {"top5_b", top5(f.top5_b)},
          {"margin_a", num(f.margin_a)},
          {"margin_b", num(f.margin_b)},
          {"margin_logit_a", num(f.margin_logit_a)},
          {"margin_logit_b", num(f.margin_logit_b)},
          {"top5_a_tokens", top5_tokens(f.top5_a)},
          {"top5_b_tokens", top5_tokens(f.top5_b)},
          {"context", f.context},
          {"continuation_a", f.continuation_a},
          {"continuation_b", f.continuation_b}};
}

J logits(const diff::LogitsStats& L) {
  return {{"positions", L.positions},
          {"logprob_rmse", num(L.logprob_rmse)},
          {"logprob_bounded", L.logprob_bounded},
          {"top5_jaccard_mean", num(L.top5_jaccard_mean)},
          {"top5_jaccard_min", num(L.top5_jaccard_min)},
          {"top5_size", L.top5_size},
          {"kl_mean", num(L.kl_mean)},
          {"kl_max", num(L.kl_max)},
          {"kl_max_position", L.kl_max_position},
          {"kl_exact", L.kl_exact},
          {"topk", {L.topk_a, L.topk_b}},
          {"top1_mismatch", L.top1_mismatch},
          {"choice_rows", L.choice_rows},
          {"at_risk", L.at_risk},
          {"margin_logit_min", num(L.margin_logit_min)},
          {"margin_logit_min_position", L.margin_logit_min_position},
          {"identical", L.identical}};
}

// The per-position logit metrics, one array per metric.
J positions(const diff::SequenceReport& s) {
  J kl = J::array(), jac = J::array(), ma = J::array(), mb = J::array(), pa = J::array(),
    pb = J::array(), dr = J::array(), risk = J::array();
  for (const auto& p : s.positions) {
    kl.push_back(num(p.kl));
    jac.push_back(num(p.jaccard));
    ma.push_back(num(p.margin_logit_a));
    mb.push_back(num(p.margin_logit_b));
    pa.push_back(num(p.margin_prob_a));
    pb.push_back(num(p.margin_prob_b));
    dr.push_back(num(p.logit_drift));
    risk.push_back(p.at_risk);
  }
  return {{"kl", kl},
          {"jaccard", jac},
          {"margin_logit_a", ma},
          {"margin_logit_b", mb},
          {"margin_prob_a", pa},
          {"margin_prob_b", pb},
          {"logit_drift", dr},
          {"at_risk", risk}};
}

J drift(const diff::SequenceReport& s) {
  J sites = J::array();
  for (const auto& d : s.drift) {
    sites.push_back({{"site", d.site},
                     {"layer", d.layer},
                     {"dtype", d.dtype},
                     {"noise_floor", num(d.noise_floor)},
                     {"rel_l2_median", num(d.rel_l2_median)},
                     {"rel_l2_max", num(d.rel_l2_max)},
                     {"rel_l2_max_position", d.rel_l2_max_position},
                     {"cos_median", num(d.cos_median)},
                     {"cos_min", num(d.cos_min)},
                     {"max_abs_median", num(d.max_abs_median)},
                     {"max_abs", num(d.max_abs)},
                     {"nan_positions", d.nan_positions},
                     {"above_floor", d.above_floor}});
  }
  return sites;
}

J onset(const diff::SequenceReport& s) {
  if (!s.onset) return nullptr;
  return {{"site", s.onset->site},
          {"position", s.onset->position},
          {"rel_l2", num(s.onset->rel_l2)},
          {"noise_floor", num(s.onset->noise_floor)}};
}

J layers(const diff::SequenceReport& s) {
  J rows = J::array();
  for (const auto& l : s.layers) {
    J rel = J::array();
    for (float x : l.rel_l2) rel.push_back(num(x));
    rows.push_back({{"layer", l.layer},
                    {"site", l.site},
                    {"rel_l2_median", num(l.rel_l2_median)},
                    {"growth", l.growth ? num(*l.growth) : J(nullptr)},
                    {"rel_l2", rel}});
  }
  return rows;
}

// One sequence, its fields in the report's order; the sub-objects are built above.
J sequence(const diff::SequenceReport& s) {
  J q;
  q["index"] = s.index;
  q["verdict"] = diff::verdict_text(s);
  q["prompt_equal"] = s.prompt_equal;
  q["prompt_diff"] = prompt_diff(s);
  q["prompt_len"] = {s.prompt_len_a, s.prompt_len_b};
  q["gen_len"] = {s.gen_len_a, s.gen_len_b};
  q["rows"] = {s.rows_a, s.rows_b};
  q["stop_reason"] = {s.stop_reason_a, s.stop_reason_b};
  q["compared"] = s.compared;
  q["first_flip"] = first_flip(s);
  q["logits"] = s.has_logits ? logits(s.logits) : J(nullptr);
  q["positions"] = s.has_logits ? positions(s) : J(nullptr);
  q["drift"] = drift(s);
  q["sites_only_a"] = s.sites_only_a;
  q["sites_only_b"] = s.sites_only_b;
  q["onset"] = onset(s);
  q["layers"] = layers(s);
  q["hidden_identical"] = s.hidden_identical;
  q["notes"] = s.notes;
  return q;
}

J kernel_use(const diff::KernelUse& u, bool with_name) {
  J configs = J::array();
  for (const auto& c : u.configs) {
    configs.push_back({{"grid", c.grid}, {"block", c.block}, {"launches", c.launches}});
  }
  J j = J::object();
  if (with_name) {
    j["op"] = u.op;
    j["name"] = u.name;
  }
  j["launches"] = u.launches;
  j["duration_ns"] = u.duration_ns;
  j["configs"] = configs;
  return j;
}

J kernels(const diff::KernelReport& k) {
  J sites = J::array();
  for (const auto& s : k.sites) {
    J only_a = J::array(), only_b = J::array(), changed = J::array();
    for (const auto& u : s.only_a) only_a.push_back(kernel_use(u, true));
    for (const auto& u : s.only_b) only_b.push_back(kernel_use(u, true));
    for (const auto& c : s.changed) {
      changed.push_back({{"op", c.a.op},
                         {"name", c.a.name},
                         {"a", kernel_use(c.a, false)},
                         {"b", kernel_use(c.b, false)}});
    }
    sites.push_back({{"site", s.site},
                     {"rel_l2_median", s.rel_l2_median ? num(*s.rel_l2_median) : J(nullptr)},
                     {"launches", {s.launches_a, s.launches_b}},
                     {"duration_ns", {s.duration_ns_a, s.duration_ns_b}},
                     {"only_a", only_a},
                     {"only_b", only_b},
                     {"changed", changed}});
  }
  return {{"tables", diff::kernel_tables_name(k.tables)},
          {"records", {k.records_a, k.records_b}},
          {"passes", {k.passes_a, k.passes_b}},
          {"passes_compared", k.passes_compared},
          {"sites_compared", k.sites_compared},
          {"duration_ns", {k.duration_ns_a, k.duration_ns_b}},
          {"sites", sites}};
}

J noise(const diff::NoiseReport& n) {
  J sites = J::array();
  for (const auto& s : n.sites) {
    J floors = J::array();
    for (double f : s.floor_by_bucket) floors.push_back(num(f));
    sites.push_back({{"site", s.site},
                     {"layer", s.layer},
                     {"storage", s.storage},
                     {"drift", num(s.drift)},
                     {"floor", num(s.floor)},
                     {"floor_units", num(s.floor_units)},
                     {"stat", num(s.stat)},
                     {"driver", s.driver},
                     {"p", num(s.p)},
                     {"p_family", num(s.p_family)},
                     {"significant", s.significant},
                     {"floor_by_bucket", floors}});
  }
  J seqs = J::array();
  for (const auto& q : n.per_sequence) {
    seqs.push_back({{"seq", q.seq},
                    {"rows", q.rows},
                    {"p_flip", num(q.p_flip)},
                    {"flipped", q.flipped},
                    {"compared", q.compared},
                    {"p_at_least", num(q.flipped ? q.p_flip : 1.0)}});
  }
  return {{"floor", n.floor},
          {"perturbation", n.perturbation},
          {"runs", n.runs},
          {"alpha", num(n.alpha)},
          {"headline", n.headline},
          {"beyond", n.beyond},
          {"drift_beyond", n.drift_beyond},
          {"flips_beyond", n.flips_beyond},
          {"onset", n.onset ? J(*n.onset) : J(nullptr)},
          {"p_family_min", num(n.p_family_min)},
          {"bucket_starts", n.bucket_starts},
          {"sites", sites},
          {"flips",
           {{"sequences", n.sequences},
            {"expected", num(n.expected_flips)},
            {"observed", n.observed_flips},
            {"p", num(n.p_flips)},
            {"replay_mean", num(n.replay_mean_flips)},
            {"replay_max", n.replay_max_flips},
            {"p_empirical", num(n.p_flips_empirical)},
            {"per_sequence", seqs}}},
          {"notes", n.notes}};
}

J side(const diff::TraceSide& t) {
  J j = {{"path", t.path},
         {"complete", t.complete},
         {"stop_reason", t.stop_reason},
         {"tool_version", t.tool_version},
         {"producer", t.producer},
         {"model_files", t.model_files},
         {"sequences", t.sequences}};
  if (!t.certify.empty()) j["certify"] = t.certify;  // only for a run --certify trace
  return j;
}

}  // namespace

std::string render_json(const diff::Report& r, int indent) {
  J j;
  j["format"] = kJsonFormat;
  j["version"] = kJsonVersion;
  j["a"] = side(r.a);
  j["b"] = side(r.b);
  j["model_equal"] = r.model_equal;
  j["model_known"] = r.model_known;
  J cfg = J::object();
  for (const auto& c : r.config_diff) cfg[c.field] = J::array({raw_value(c.a), raw_value(c.b)});
  j["config_diff"] = cfg;
  j["warnings"] = r.warnings;
  j["only_in_a"] = r.only_in_a;
  j["only_in_b"] = r.only_in_b;
  J skipped = J::array();
  for (const auto& k : r.skipped)
    skipped.push_back({{"seq", k.seq}, {"what", k.what}, {"why", k.why}});
  j["skipped"] = skipped;
  J seqs = J::array();
  for (const auto& s : r.sequences) seqs.push_back(sequence(s));
  j["sequences"] = seqs;
  j["kernels"] = kernels(r.kernels);
  j["summary"] = {{"sequences", r.summary.sequences},
                  {"diverged", r.summary.diverged},
                  {"div_percent", num(r.summary.div_percent)},
                  {"prompts_differ", r.summary.prompts_differ},
                  {"drifted", r.summary.drifted}};
  if (r.noise) j["noise"] = noise(*r.noise);  // only with --floor: other reports are unchanged
  return j.dump(indent, ' ', false, J::error_handler_t::replace) + "\n";
}

}  // namespace ds::viewer
