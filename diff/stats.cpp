// N-way statistics over runs: the groups, attribution by knob, and reading a trace for them.
#include "diff/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "diff/identity.h"
#include "diff/stats_math.h"

namespace ds::diff {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string prompts_key(const trace::TraceReader& r) {
  std::string key;
  for (int i : r.sequence_indices()) {
    const auto s = r.sequence(i);
    key += fmt::format("{}:", i);
    for (int t = 0; t < s.prompt_len; ++t) key += fmt::format("{},", s.tokens[t]);
    key += ";";
  }
  return key;
}

// The trace whose key differs from the most common key (the first of them), or -1.
int odd_one_out(const std::vector<std::string>& keys) {
  std::map<std::string, int> count;
  for (const auto& k : keys) ++count[k];
  if (count.size() <= 1) return -1;
  const std::string* common = &keys[0];
  for (const auto& k : keys) {
    if (count[k] > count[*common]) common = &k;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] != *common) return static_cast<int>(i);
  }
  return -1;
}

// Avg_Std@top1_prob of runs over prompts given their Div_Index: the population standard
// deviation across runs of the chosen token's probability at each position before Div_Index,
// averaged over positions, then over the prompts with at least one such position.
double avg_std_top1(const std::vector<const StatsRun*>& runs, const std::vector<int>& div,
                    int* prompts_used) {
  double sum = 0;
  int used = 0;
  for (size_t p = 0; p < div.size(); ++p) {
    double prompt_sum = 0;
    int positions = 0;
    for (int t = 0; t < div[p]; ++t) {
      std::vector<double> probs;
      for (const auto* r : runs) {
        const auto& tp = r->token_prob[p];
        if (static_cast<size_t>(t) < tp.size() && std::isfinite(tp[t])) probs.push_back(tp[t]);
      }
      if (probs.size() != runs.size()) continue;  // a probability that was not recorded
      prompt_sum += stddev(probs, 0);
      ++positions;
    }
    if (positions == 0) continue;
    sum += prompt_sum / positions;
    ++used;
  }
  if (prompts_used) *prompts_used = used;
  return used == 0 ? kNaN : sum / used;
}

std::vector<int> div_indices(const std::vector<const StatsRun*>& runs, int prompts) {
  std::vector<int> div(static_cast<size_t>(prompts));
  for (int p = 0; p < prompts; ++p) {
    std::vector<const std::vector<int32_t>*> outs;
    for (const auto* r : runs) outs.push_back(&r->outputs[p]);
    div[p] = div_index(outs);
  }
  return div;
}

bool all_equal_outputs(const std::vector<const StatsRun*>& runs, int p) {
  for (const auto* r : runs) {
    if (r->outputs[p] != runs[0]->outputs[p]) return false;
  }
  return true;
}

double div_percent(const std::vector<const StatsRun*>& runs, int prompts) {
  int differ = 0;
  for (int p = 0; p < prompts; ++p) differ += !all_equal_outputs(runs, p);
  return prompts == 0 ? 0.0 : 100.0 * differ / prompts;
}

// The raw output of prompt p as compared by TARr: its text when decoded, else its tokens.
std::string raw_output(const StatsRun& r, int p) {
  if (!r.texts.empty()) return r.texts[p];
  std::string s;
  for (int32_t t : r.outputs[p]) s += fmt::format("{},", t);
  return s;
}

std::map<std::string, std::string> without(std::map<std::string, std::string> m,
                                           const std::string& key) {
  m.erase(key);
  return m;
}

std::string label_of(const StatsRun& r, const std::vector<std::string>& varying,
                     const std::string& skip) {
  std::string label;
  for (const auto& k : varying) {
    if (k == skip) continue;
    auto it = r.config.find(k);
    label += fmt::format("{}{}={}", label.empty() ? "" : " ", k,
                         it == r.config.end() ? "?" : it->second);
  }
  return label.empty() ? "all" : label;
}

bool correct(const StatsRun& r, int p, const std::vector<std::string>& expected) {
  return r.answers[p].has_value() && *r.answers[p] == expected[p];
}

void add_accuracy(GroupStats& g, const std::vector<const StatsRun*>& runs,
                  const std::vector<std::string>& expected, const std::vector<std::string>& varying,
                  const StatsOptions& opt) {
  // Configurations: runs with equal configs apart from the seed, in first-seen order.
  std::vector<std::pair<std::map<std::string, std::string>, std::vector<const StatsRun*>>> configs;
  for (const auto* r : runs) {
    const auto key = without(r->config, "seed");
    auto it =
        std::find_if(configs.begin(), configs.end(), [&](const auto& c) { return c.first == key; });
    if (it == configs.end()) {
      configs.push_back({key, {r}});
    } else {
      it->second.push_back(r);
    }
  }
  const int prompts = g.prompts;
  std::vector<double> accs;
  for (const auto& [key, samples] : configs) {
    ConfigAccuracy ca;
    ca.label = label_of(*samples[0], varying, "seed");
    ca.samples = static_cast<int>(samples.size());
    std::vector<int> c(static_cast<size_t>(prompts), 0);
    double acc = 0;
    for (const auto* r : samples) {
      int right = 0;
      for (int p = 0; p < prompts; ++p) {
        const bool ok = correct(*r, p, expected);
        right += ok;
        c[p] += ok;
      }
      acc += prompts == 0 ? 0.0 : 100.0 * right / prompts;
    }
    ca.accuracy = acc / ca.samples;
    accs.push_back(ca.accuracy);
    std::vector<int> ks = opt.ks.empty() ? std::vector<int>{ca.samples} : opt.ks;
    for (int k : ks) {
      if (k > ca.samples) continue;
      PassAtK pk;
      pk.k = k;
      const std::vector<std::pair<std::string, double>> taus = {
          {"0.25", 0.25}, {"0.5", 0.5}, {"0.75", 0.75}, {"1.0", 1.0}};
      for (int p = 0; p < prompts; ++p) {
        pk.pass += pass_at_k(ca.samples, c[p], k);
        for (const auto& [name, tau] : taus)
          pk.g_pass[name] += g_pass_at_k(ca.samples, c[p], k, tau);
        pk.mg_pass += mg_pass_at_k(ca.samples, c[p], k);
      }
      if (prompts > 0) {
        pk.pass *= 100.0 / prompts;
        for (auto& [name, v] : pk.g_pass) v *= 100.0 / prompts;
        pk.mg_pass *= 100.0 / prompts;
      }
      ca.pass.push_back(std::move(pk));
    }
    g.accuracy.push_back(std::move(ca));
  }
  g.std_acc = stddev(accs, 1);
}

GroupStats group_stats(const std::string& key, const std::vector<const StatsRun*>& runs,
                       const std::vector<std::string>* expected,
                       const std::vector<std::string>& varying, const StatsOptions& opt) {
  GroupStats g;
  g.key = key;
  for (const auto* r : runs) g.runs.push_back(r->name);
  g.prompts = static_cast<int>(runs[0]->outputs.size());
  g.div_index = div_indices(runs, g.prompts);
  g.div_percent = div_percent(runs, g.prompts);
  g.avg_std_top1_prob = avg_std_top1(runs, g.div_index, &g.top1_prompts);
  double len_std = 0, uniq = 0;
  int tarr = 0, tara = 0;
  const bool extracted = !runs[0]->answers.empty();
  for (int p = 0; p < g.prompts; ++p) {
    std::vector<double> lengths;
    std::set<std::vector<int32_t>> distinct;
    std::set<std::string> raw;
    std::set<std::optional<std::string>> answers;
    for (const auto* r : runs) {
      lengths.push_back(static_cast<double>(r->outputs[p].size()));
      distinct.insert(r->outputs[p]);
      raw.insert(raw_output(*r, p));
      if (extracted) answers.insert(r->answers[p]);
    }
    const double s = stddev(lengths, 1);
    len_std += std::isnan(s) ? 0.0 : s;
    g.unique_outputs.push_back(static_cast<int>(distinct.size()));
    uniq += static_cast<double>(distinct.size());
    tarr += raw.size() == 1;
    tara += answers.size() == 1;
  }
  if (g.prompts > 0) {
    g.avg_std_output_length = runs.size() < 2 ? kNaN : len_std / g.prompts;
    g.unique_outputs_mean = uniq / g.prompts;
    g.tarr = 100.0 * tarr / g.prompts;
    if (extracted) g.tara = 100.0 * tara / g.prompts;
  }
  if (expected != nullptr) add_accuracy(g, runs, *expected, varying, opt);
  return g;
}

// Every run holds as many prompts as the first, and an answer key fits them.
void check_runs(const std::vector<StatsRun>& runs, const std::vector<std::string>* expected) {
  const size_t prompts = runs[0].outputs.size();
  for (const auto& r : runs) {
    if (r.outputs.size() != prompts) {
      throw Error(fmt::format("run '{}' holds {} prompts, '{}' {}", r.name, r.outputs.size(),
                              runs[0].name, prompts),
                  "statistics compare runs of one prompt set: give traces of the same prompts");
    }
  }
  if (expected != nullptr && expected->size() != prompts) {
    throw Error(
        fmt::format("the answer key holds {} answers for {} prompts", expected->size(), prompts),
        "--answers takes one expected answer per line, in prompt order");
  }
  if (expected != nullptr && runs[0].answers.empty()) {
    throw Error("an answer key needs an extraction rule",
                "pass --extract 'REGEX' with one (group)");
  }
}

// The run-config fields any run holds.
std::set<std::string> config_fields(const std::vector<StatsRun>& runs) {
  std::set<std::string> keys;
  for (const auto& r : runs) {
    for (const auto& [k, v] : r.config) keys.insert(k);
  }
  return keys;
}

// The fields of `keys` whose value is not the same in every run (a missing one counts as "").
std::vector<std::string> varying_fields(const std::vector<StatsRun>& runs,
                                        const std::set<std::string>& keys) {
  std::vector<std::string> varying;
  for (const auto& k : keys) {
    std::set<std::string> values;
    for (const auto& r : runs) {
      auto it = r.config.find(k);
      values.insert(it == r.config.end() ? "" : it->second);
    }
    if (values.size() > 1) varying.push_back(k);
  }
  return varying;
}

// The group of all runs, then one per value of opt.group_by, in first-seen order.
std::vector<GroupStats> all_groups(const std::vector<StatsRun>& runs,
                                   const std::vector<std::string>* expected,
                                   const std::vector<std::string>& varying,
                                   const StatsOptions& opt) {
  std::vector<GroupStats> out;
  std::vector<const StatsRun*> all;
  for (const auto& r : runs) all.push_back(&r);
  out.push_back(group_stats("all", all, expected, varying, opt));
  if (!opt.group_by.empty()) {
    std::vector<std::pair<std::string, std::vector<const StatsRun*>>> groups;
    for (const auto& r : runs) {
      const std::string v = r.config.count(opt.group_by) ? r.config.at(opt.group_by) : "";
      auto it =
          std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == v; });
      if (it == groups.end()) {
        groups.push_back({v, {&r}});
      } else {
        it->second.push_back(&r);
      }
    }
    for (const auto& [v, members] : groups) {
      out.push_back(group_stats(opt.group_by + "=" + v, members, expected, varying, opt));
    }
  }
  return out;
}

// The divergence attributed to one knob, over the pairs of runs that differ in it alone.
Attribution knob_attribution(const std::vector<StatsRun>& runs, const std::string& knob,
                             int prompts) {
  Attribution a;
  a.knob = knob;
  double div_sum = 0, top1_sum = 0;
  int top1_pairs = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t j = i + 1; j < runs.size(); ++j) {
      if (runs[i].config.at(knob) == runs[j].config.at(knob)) continue;
      if (without(runs[i].config, knob) != without(runs[j].config, knob)) continue;
      const std::vector<const StatsRun*> pair = {&runs[i], &runs[j]};
      const auto div = div_indices(pair, prompts);
      div_sum += div_percent(pair, prompts);
      const double s = avg_std_top1(pair, div, nullptr);
      if (!std::isnan(s)) {
        top1_sum += s;
        ++top1_pairs;
      }
      ++a.pairs;
    }
  }
  a.div_percent = a.pairs == 0 ? kNaN : div_sum / a.pairs;
  a.avg_std_top1_prob = top1_pairs == 0 ? kNaN : top1_sum / top1_pairs;
  return a;
}

// Div_% of every pair of runs, as a symmetric matrix with a zero diagonal.
std::vector<std::vector<double>> pairwise_differ(const std::vector<StatsRun>& runs, int prompts) {
  std::vector<std::vector<double>> out(runs.size(), std::vector<double>(runs.size(), 0.0));
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t j = i + 1; j < runs.size(); ++j) {
      const std::vector<const StatsRun*> pair = {&runs[i], &runs[j]};
      out[i][j] = out[j][i] = div_percent(pair, prompts);
    }
  }
  return out;
}

}  // namespace

StatsRun read_stats_run(const trace::TraceReader& r) {
  StatsRun run;
  run.name = r.path().stem().string();
  const auto cfg = nlohmann::json::parse(r.config_json(), nullptr, false);
  if (cfg.is_object()) {
    for (const auto& [k, v] : cfg.items()) {
      if (k != "trace") run.config[k] = value_text(v);
    }
  }
  for (int i : r.sequence_indices()) {
    const auto s = r.sequence(i);
    std::vector<int32_t> gen(s.tokens.begin() + s.prompt_len, s.tokens.end());
    std::vector<double> probs(gen.size(), kNaN);
    const int64_t first = s.prompt_len - 1;  // the row that chose the first generated token
    const int64_t count = std::min<int64_t>(static_cast<int64_t>(gen.size()), s.rows - first);
    if (s.topk > 0 && first >= 0 && count > 0) {
      const auto top = r.topk(i, first, count);
      const auto lse = r.lse(i, first, count);
      for (int64_t t = 0; t < count; ++t) {
        for (int j = 0; j < top.k; ++j) {
          if (top.ids[t * top.k + j] == gen[t]) {
            probs[t] = std::exp(static_cast<double>(top.logits[t * top.k + j]) - lse[t]);
            break;
          }
        }
      }
    }
    run.outputs.push_back(std::move(gen));
    run.token_prob.push_back(std::move(probs));
  }
  return run;
}

void check_comparable(const std::vector<const trace::TraceReader*>& traces) {
  std::vector<std::string> models, prompts;
  for (const auto* t : traces) {
    models.push_back(model_key(model_identity(t->model_json())));
    prompts.push_back(prompts_key(*t));
  }
  if (int odd = odd_one_out(models); odd >= 0) {
    throw Error(fmt::format("trace '{}' is of a different model than the others",
                            traces[odd]->path().string()),
                "stats compares runs of one model: leave that trace out");
  }
  if (int odd = odd_one_out(prompts); odd >= 0) {
    throw Error(fmt::format("trace '{}' holds a different prompt set than the others",
                            traces[odd]->path().string()),
                "stats compares runs of one prompt set: leave that trace out");
  }
}

StatsReport compute_stats(const std::vector<StatsRun>& runs,
                          const std::vector<std::string>* expected, const StatsOptions& opt) {
  if (runs.empty()) throw Error("stats needs at least one trace");
  StatsReport rep;
  rep.group_by = opt.group_by;
  const size_t prompts = runs[0].outputs.size();
  for (const auto& r : runs) rep.runs.push_back(r.name);
  check_runs(runs, expected);
  const std::set<std::string> keys = config_fields(runs);
  rep.varying = varying_fields(runs, keys);
  if (!opt.group_by.empty() && keys.count(opt.group_by) == 0) {
    throw Error(fmt::format("unknown group-by field '{}'", opt.group_by),
                "--group-by takes a run-config field such as dtype, batch or tp, or none");
  }
  rep.groups = all_groups(runs, expected, rep.varying, opt);
  for (const auto& knob : rep.varying) {
    rep.attribution.push_back(knob_attribution(runs, knob, static_cast<int>(prompts)));
  }
  rep.pairwise_differ = pairwise_differ(runs, static_cast<int>(prompts));
  return rep;
}

}  // namespace ds::diff
