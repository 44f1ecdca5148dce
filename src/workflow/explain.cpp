// Explaining a zoom's flips: each flip's knob search and op search over trials run in rounds.
//
// The searches (diff/cause_search.h) are plain functions of their oracle. Here the oracle answers
// from the trials' traces in DIR; a trial not run yet is noted and the search stops (PendingTrial).
// A round runs every trial the searches of all flips are waiting for, at once (-j, or one Slurm
// job array); then every search starts again from the beginning, asks the same trials as before,
// answered now from their traces, and goes on to the next one it needs. A trial's trace is its
// memory, so explain run again resumes where it stopped.
#include "src/workflow/explain.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/output_file.h"
#include "diff/flip_aggregate.h"
#include "src/console/output.h"
#include "src/workflow/child_runs.h"
#include "src/workflow/explain_knobs.h"
#include "src/workflow/explain_ops.h"
#include "src/workflow/loaded_model.h"
#include "src/workflow/report_file.h"
#include "viewer/explain_html.h"
#include "viewer/explain_json.h"
#include "viewer/explain_terminal.h"

namespace ds {
namespace {

// Thrown by an oracle whose trial has not run yet.
struct PendingTrial {};

const char* kWriteHint = "check that -o names a writable folder and the disk is not full";

// One flip being explained.
struct FlipTask {
  const ZoomSeq* z = nullptr;
  diff::FirstFlip flip;
  FlipRow row;  // in a knob trial's trace (the zoom's replay index)
  const diff::AttributionReport* attribution = nullptr;
  std::optional<diff::KnobSearch> knobs;
  // op level
  bool ops_ready = false;
  std::string ops_skip;  // why there is no op search (empty: there is one)
  std::vector<int> op_knobs;
  std::optional<OpLevelPlan> ops_plan;
  std::optional<diff::OpSearch> ops;
  std::string plan_bits;
};

// The batch group of sequence `seq` in a run of `batch` (static groups of consecutive prompts)
// as trace `t` recorded it.
MemberOf member_of(const trace::TraceReader& t, int seq, int batch) {
  MemberOf m;
  const std::vector<int> all = t.sequence_indices();
  const int b = std::max(1, batch);
  const int first = seq / b * b;
  for (int i : all) {
    if (i < first || i >= first + b) continue;
    const trace::SequenceInfo s = t.sequence(i);
    if (i == seq) m.member = static_cast<int>(m.group.prompt_lens.size());
    m.group.prompt_lens.push_back(s.prompt_len);
    m.group.gen_lens.push_back(s.gen_len);
  }
  return m;
}

class Explainer {
 public:
  Explainer(const std::filesystem::path& dir, const ZoomPlan& plan, TrialRunner& runner)
      : dir_(std::filesystem::absolute(dir)),
        plan_(plan),
        runner_(runner),
        space_(knob_space(plan.side_a, plan.side_b)) {
    if (!plan.side_a.recorder) {
      ModelArgs ma;
      ma.model = plan.model;
      ma.tokenizer = plan.tokenizer;
      model_ = std::make_unique<LoadedModel>(
          load_model_and_prompt(ma, /*need_tokenizer=*/false, /*want_prompt=*/false));
    } else if (plan.side_a.recorder->command.empty()) {
      recorder_ = *plan.side_a.recorder;
      find_recorder(*recorder_, plan.side_a.source, side_prompts(dir_, plan.side_a),
                    dir_ / "trials" / "a.h5");
    } else {
      recorder_ = *plan.side_a.recorder;
    }
  }

  int n() const { return static_cast<int>(space_.knobs.size()); }

  // Runs the searches in rounds; returns an exit code when it stops before they end.
  std::optional<int> search(std::vector<FlipTask>& flips) {
    bool first = true;
    for (;;) {
      pending_.clear();
      done_.clear();
      if (first && n() <= 6) {  // the factorial's trials are known: all in the first round
        for (uint32_t m = 0; m < (1u << n()); ++m) {
          const diff::ChangeSet s = diff::set_of_mask(m);
          if (!refusal(s).empty()) continue;  // not run: unresolved
          const Trial t = knob_trial(s);
          if (!done(t)) pending_.emplace(t.name, t);
        }
      }
      first = false;
      for (FlipTask& f : flips) advance(f);
      if (pending_.empty()) return std::nullopt;
      std::vector<Trial> round;
      for (auto& [name, t] : pending_) round.push_back(t);
      if (!runner_.quiet) {
        print_note("explain: {} trial(s) to run\n", round.size());
      }
      for (const Trial& t : round) write_inputs(t);
      if (const auto rc = run_trials(runner_, round)) return rc;
      readers_.clear();
    }
  }

  diff::ExplainReport report(const std::vector<FlipTask>& flips, const ZoomAnalysis& analysis,
                             const ZoomPlan& plan) const;

 private:
  // ---- knob trials ----

  // Why a knob set's configuration is refused before any run ("" when it is not).
  std::string refusal(const diff::ChangeSet& s) const {
    if (!model_) return "";
    try {
      const RunConfig c = trial_config(plan_.side_a.config, space_, s);
      validate(c);
      validate_for_model(c, model_->model.config);
    } catch (const Error& e) {
      return fmt::format("the combination is refused: {}", e.what());
    }
    return "";
  }

  Trial knob_trial(const diff::ChangeSet& s) const {
    const bool b_side = sets_batch(space_, s);
    const ZoomSide& side = b_side ? plan_.side_b : plan_.side_a;
    Trial t;
    if (s.empty() || (b_side && static_cast<int>(s.size()) == n())) {
      t.name = side.name;  // the zoom's own replay of that side
      t.trace = side_trace(dir_, side);
      if (side.recorder) {
        t.recorder = side.recorder;
      } else {
        t.config_json = to_json(side.config);
      }
      return t;
    }
    uint64_t mask = 0;
    for (int k : s) mask |= uint64_t{1} << k;
    t.name = fmt::format("knobs-{:x}", mask);
    t.trace = dir_ / "trials" / (t.name + ".h5");
    const std::filesystem::path prompts = side_prompts(dir_, side);
    if (recorder_) {
      RecorderReplay r = *recorder_;
      r.options = trial_options(*recorder_, space_, s);
      t.argv = recorder_argv(r, prompts, t.trace);
      t.sets_threads = true;
      t.recorder = r;
      return t;
    }
    const RunConfig c = trial_config(plan_.side_a.config, space_, s);
    const auto toml = dir_ / "trials" / (t.name + ".toml");
    t.inputs.emplace_back(toml, to_toml(c));
    t.argv = run_argv(toml, prompts, t.trace, {});
    t.config_json = to_json(c);
    return t;
  }

  std::vector<std::string> run_argv(const std::filesystem::path& config,
                                    const std::filesystem::path& prompts,
                                    const std::filesystem::path& trace,
                                    const std::filesystem::path& plan) const {
    std::vector<std::string> argv = {self_exe().string(), "run",       "--config",
                                     config.string(),     "--prompts", prompts.string()};
    if (!plan.empty()) argv.insert(argv.end(), {"--plan", plan.string()});
    if (!plan_.model.empty()) argv.insert(argv.end(), {"--model", plan_.model});
    if (!plan_.tokenizer.empty()) argv.insert(argv.end(), {"--tokenizer", plan_.tokenizer});
    argv.insert(argv.end(), {"--probes", "none", "-o", trace.string(), "--force", "-q"});
    return argv;
  }

  diff::TrialOutcome knob_outcome(const diff::ChangeSet& s, const FlipTask& f) {
    if (const std::string why = refusal(s); !why.empty()) {
      diff::TrialOutcome o;
      o.margin = NAN;
      o.why = why;
      return o;
    }
    return outcome(knob_trial(s), f.row);
  }

  // ---- op trials ----

  Trial op_trial(const FlipTask& f, const diff::ChangeSet& s) const {
    PlanSpec spec = f.ops_plan->spec;
    for (int i : s) spec.b_ops.push_back(op_id_name(f.ops_plan->candidates[i]));
    const std::string id = op_set_id(spec.b_ops);
    const auto folder = dir_ / "ops" / fmt::format("seq-{}", f.z->seq);
    Trial t;
    t.name = fmt::format("ops-{}-{}", f.z->seq, id);
    t.trace = folder / (id + ".h5");
    const auto plan_file = folder / (id + ".plan.json");
    const std::string plan_text = plan_spec_json(spec);
    t.inputs.emplace_back(plan_file, plan_text + "\n");
    nlohmann::json prompt;
    const auto& tokens = f.row.history;
    prompt["ids"] =
        std::vector<int32_t>(tokens.begin(), tokens.begin() + f.flip.position - f.flip.step);
    std::vector<int32_t> forced(tokens.begin() + f.flip.position - f.flip.step, tokens.end());
    forced.push_back(f.row.token_a);
    prompt["forced"] = forced;
    t.inputs.emplace_back(folder / "prompt.jsonl", prompt.dump() + "\n");
    t.argv = run_argv(dir_ / "configs" / "a.toml", folder / "prompt.jsonl", t.trace, plan_file);
    auto config = nlohmann::json::parse(to_json(plan_.side_a.config));
    config["plan"] = nlohmann::json::parse(plan_spec_json(parse_plan_spec(plan_text, "")));
    t.config_json = config.dump();
    return t;
  }

  diff::TrialOutcome op_outcome(const FlipTask& f, const diff::ChangeSet& s) {
    FlipRow row = f.row;
    row.replay_index = 0;
    return outcome(op_trial(f, s), row);
  }

  // The op level of a flip whose knob search ended: its knob set, and why not when it cannot run.
  void prepare_ops(FlipTask& f) {
    f.ops_ready = true;
    const diff::KnobSearch& k = *f.knobs;
    if (k.verdict != "explained") return;
    f.op_knobs = k.sets.front();
    if (plan_.side_a.recorder || plan_.side_a.config.device != Device::cpu) {
      f.ops_skip = "-";  // the report's one line says why (Explainer::report)
      return;
    }
    const RunConfig b = trial_config(plan_.side_a.config, space_, f.op_knobs);
    if (b.device != Device::cpu) {
      f.ops_skip = "op level is CPU-only (a numerics plan mixes ops in the CPU emulation)";
      return;
    }
    for (int i : f.op_knobs) {
      const std::string& name = space_.knobs[i].name;
      if (!op_level_knob(name)) {
        f.ops_skip = fmt::format(
            "no op level: {} {}", name,
            name == "prefill_chunk" || name == "prefix_cache"
                ? "changes which passes compute the rows; a plan mixes ops within one pass "
                  "structure"
                : "decides the choice of the token, not an op's numerics");
        return;
      }
    }
    const trace::TraceReader& ta = reader(plan_.a);
    const trace::TraceReader& tb = reader(plan_.b);
    const bool b_batch = sets_batch(space_, f.op_knobs);
    const MemberOf ga = member_of(ta, f.z->seq, plan_.side_a.config.batch);
    const MemberOf gb = b_batch ? member_of(tb, f.z->seq, plan_.side_b.config.batch) : ga;
    f.ops_plan =
        op_level_plan(model_->model.config, plan_.side_a.config, b, ga, gb,
                      static_cast<int>(f.flip.position - f.flip.step), f.flip.step, f.attribution);
    if (f.ops_plan->candidates.empty()) {
      f.ops_skip = "no op decides differently under the knob set";
      f.ops_plan.reset();
    }
  }

  // B's plan at every candidate op, replayed alone, against the knob set's batched replay.
  void compare_bits(FlipTask& f) {
    const bool weights = std::any_of(f.op_knobs.begin(), f.op_knobs.end(),
                                     [&](int k) { return space_.knobs[k].name == "dtype"; });
    if (weights) return;  // the plan keeps A's weights: not B's bits by design
    diff::ChangeSet all;
    for (size_t i = 0; i < f.ops_plan->candidates.size(); ++i) all.push_back(static_cast<int>(i));
    const Trial op = op_trial(f, all), knob = knob_trial(f.op_knobs);
    if (!done(op) || !done(knob)) return;
    f.plan_bits =
        same_logits(reader(op.trace), 0, reader(knob.trace), f.z->replay_index, f.flip.row) ? "yes"
                                                                                            : "no";
  }

  void advance(FlipTask& f) {
    try {
      if (!f.knobs) {
        f.knobs =
            diff::search_knobs(n(), [&](const diff::ChangeSet& s) { return knob_outcome(s, f); });
      }
      if (!f.ops_ready) prepare_ops(f);
      if (f.ops_plan && !f.ops) {
        f.ops = diff::search_ops(
            static_cast<int>(f.ops_plan->candidates.size()),
            [&](const diff::ChangeSet& s) { return op_outcome(f, s); }, f.ops_plan->first,
            f.ops_plan->order);
        compare_bits(f);
      }
    } catch (const PendingTrial&) {
      // waits for this round's trials
    }
  }

  // ---- traces ----

  bool done(const Trial& t) {
    const auto it = done_.find(t.name);
    if (it != done_.end()) return it->second;
    return done_[t.name] = trial_done(t);
  }

  diff::TrialOutcome outcome(const Trial& t, const FlipRow& row) {
    if (!done(t)) {
      pending_.emplace(t.name, t);
      throw PendingTrial{};
    }
    used_.insert(t.name);
    return flip_outcome(reader(t.trace), row);
  }

  const trace::TraceReader& reader(const std::string& path) const {
    auto it = readers_.find(path);
    if (it == readers_.end()) {
      it = readers_
               .emplace(path, std::make_unique<trace::TraceReader>(trace::TraceReader::open(path)))
               .first;
    }
    return *it->second;
  }
  const trace::TraceReader& reader(const std::filesystem::path& p) const {
    return reader(p.string());
  }

  void write_inputs(const Trial& t) const {
    for (const auto& [path, text] : t.inputs) {
      std::filesystem::create_directories(path.parent_path());
      write_file_or_fail(path, text, kWriteHint);
    }
  }

  std::filesystem::path dir_;
  const ZoomPlan& plan_;
  TrialRunner& runner_;
  KnobSpace space_;
  std::unique_ptr<LoadedModel> model_;
  std::optional<RecorderReplay> recorder_;
  std::map<std::string, Trial> pending_;
  std::map<std::string, bool> done_;
  std::set<std::string> used_;  // the trials whose outcomes the searches read
  mutable std::map<std::string, std::unique_ptr<trace::TraceReader>> readers_;
};

std::vector<std::string> names_of(const KnobSpace& s, const diff::ChangeSet& set) {
  std::vector<std::string> out;
  for (int k : set) out.push_back(s.knobs[k].name);
  return out;
}

std::vector<diff::ExplainTrial> trials_of(
    const std::map<diff::ChangeSet, diff::TrialOutcome>& m,
    const std::function<std::vector<std::string>(const diff::ChangeSet&)>& names) {
  std::vector<diff::ExplainTrial> out;
  for (const auto& [set, o] : m) out.push_back({names(set), o});
  return out;
}

diff::ExplainReport Explainer::report(const std::vector<FlipTask>& flips,
                                      const ZoomAnalysis& analysis, const ZoomPlan& plan) const {
  diff::ExplainReport r;
  r.a_path = plan.a;
  r.b_path = plan.b;
  r.engine = space_.engine;
  r.knobs = space_.knobs;
  r.left_out = space_.left_out;
  if (plan.side_a.recorder) {
    r.op_level = fmt::format(
        "no op level: {} traces are replayed by the recorder, which cannot mix ops (the knob "
        "level sets the recorder's options)",
        space_.engine);
  } else if (plan.side_a.config.device != Device::cpu) {
    r.op_level =
        "op level is CPU-only: A runs on cuda, and a numerics plan mixes ops in the CPU "
        "emulation (per-GEMM kernel choice on the GPU is not an op level yet)";
  }
  // the diffs' onsets and the attributions' births, per zoomed sequence
  std::vector<diff::FlipCase> cases;
  if (analysis.attributions.size() == plan.seqs.size()) {
    std::vector<diff::ZoomedPair> pairs;
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      pairs.push_back({&analysis.diffs[i], &analysis.attributions[i], plan.seqs[i].seq});
    }
    cases = diff::aggregate_flips(pairs).cases;
  }
  for (const FlipTask& f : flips) {
    diff::FlipExplanation e;
    e.seq = f.z->seq;
    e.step = f.flip.step;
    e.row = f.flip.row;
    e.token_a = f.flip.token_a;
    e.token_b = f.flip.token_b;
    e.text_a = f.flip.text_a;
    e.text_b = f.flip.text_b;
    const diff::KnobSearch& k = *f.knobs;
    e.verdict = k.verdict;
    e.why = k.why;
    e.method = k.method;
    e.margin_before = k.before.margin;
    e.margin_after = k.after.margin;
    for (const auto& s : k.sets) e.knob_sets.push_back(names_of(space_, s));
    e.knob_set_trials = k.set_trials;
    e.knob_trials = k.trials;
    e.trials = trials_of(k.outcomes, [&](const diff::ChangeSet& s) { return names_of(space_, s); });
    if (k.effects.complete) {
      e.main_effect = k.effects.main;
      e.shapley = k.effects.shapley;
      e.share = k.effects.share;
      for (const auto& i : k.effects.interactions) {
        e.interactions.push_back({names_of(space_, i.changes), i.value});
      }
    }
    diff::OpCause& o = e.ops;
    if (k.verdict == "explained") {
      o.knobs = names_of(space_, f.op_knobs);
      if (!f.ops_skip.empty()) {
        o.status = "skipped";
        o.why = f.ops_skip == "-" ? r.op_level : f.ops_skip;
      } else if (f.ops) {
        const OpLevelPlan& p = *f.ops_plan;
        o.candidates = static_cast<int>(p.candidates.size());
        o.status = f.ops->verdict;
        o.single = f.ops->single;
        o.trials = f.ops->trials;
        o.margin_all = f.ops->all.margin;
        o.plan_bits = f.plan_bits;
        if (f.ops->verdict == "none") {
          o.why = "B's numerics at every op keep A's token";
          if (std::find(o.knobs.begin(), o.knobs.end(), "dtype") != o.knobs.end()) {
            o.why += " (a plan keeps A's weights: the weights' rounding carries the cause)";
          }
        }
        for (int i : f.ops->set) {
          o.ops.push_back(op_id_name(p.candidates[i]));
          o.what.push_back(p.what[i]);
        }
        o.trials_run = trials_of(f.ops->outcomes, [&](const diff::ChangeSet& s) {
          std::vector<std::string> names;
          for (int i : s) names.push_back(op_id_name(p.candidates[i]));
          if (names.size() == p.candidates.size() && names.size() > 3)
            return std::vector<std::string>{"(all candidates)"};
          return names;
        });
      }
    }
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      if (plan.seqs[i].seq != f.z->seq) continue;
      const diff::SequenceReport& s = analysis.diffs[i].sequences.front();
      if (s.onset) e.onset = fmt::format("{} @{}", s.onset->site, s.onset->position);
      if (i < cases.size() && cases[i].has_birth) e.born_in = cases[i].birth_block;
    }
    const bool weights =
        o.status == "none" && std::find(o.knobs.begin(), o.knobs.end(), "dtype") != o.knobs.end();
    e.place = !o.ops.empty()       ? o.ops.front()
              : weights            ? "weights"  // every op at B's numerics is not enough
              : !e.born_in.empty() ? e.born_in
                                   : e.onset;
    r.flips.push_back(std::move(e));
  }
  for (const std::string& name : used_) ++(name.rfind("ops-", 0) == 0 ? r.op_runs : r.knob_runs);
  r.wall_s = runner_.seconds;
  diff::explain_aggregate(r);
  return r;
}

}  // namespace

void check_explainable(const diff::Report& original, const std::vector<int>& seqs) {
  std::string flipped;
  for (const auto& s : original.sequences) {
    if (s.verdict == diff::Verdict::prompts_differ) return;  // zoom's plan refuses them
    if (s.first_flip) flipped += fmt::format("{}{}", flipped.empty() ? "" : ",", s.index);
  }
  if (flipped.empty()) {
    throw Error(
        "no sequence flipped: A and B choose the same tokens everywhere, so there is no "
        "token to explain",
        "to look into drift without a flip: driftscope zoom A.h5 B.h5 -o DIR --seq LIST "
        "(driftscope diff A.h5 B.h5 shows the drift)");
  }
  for (int seq : seqs) {
    for (const auto& s : original.sequences) {
      if (s.index == seq && !s.first_flip) {
        throw Error(fmt::format("sequence {} does not flip: there is no token to explain", seq),
                    fmt::format("--seq takes flipped sequences: {}", flipped));
      }
    }
  }
}

void check_explainable(const ZoomPlan& plan) {
  knob_space(plan.side_a, plan.side_b);  // refuses what cannot be mixed
}

ExplainResult explain_flips(const std::filesystem::path& dir, const ZoomPlan& plan,
                            const diff::Report& original, const ZoomAnalysis& analysis,
                            TrialRunner& runner) {
  Explainer ex(dir, plan, runner);
  const trace::TraceReader ta = trace::TraceReader::open(plan.a);
  std::vector<FlipTask> flips;
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ZoomSeq& z = plan.seqs[i];
    for (const auto& s : original.sequences) {
      if (s.index != z.seq || !s.first_flip) continue;
      FlipTask f;
      f.z = &z;
      f.flip = *s.first_flip;
      f.row.replay_index = z.replay_index;
      f.row.row = f.flip.row;
      f.row.token_a = f.flip.token_a;
      f.row.token_b = f.flip.token_b;
      const trace::SequenceInfo si = ta.sequence(z.seq);
      f.row.history.assign(si.tokens.begin(), si.tokens.begin() + f.flip.position);
      if (i < analysis.attributions.size()) f.attribution = &analysis.attributions[i];
      flips.push_back(std::move(f));
    }
  }
  if (const auto rc = ex.search(flips)) return {std::nullopt, *rc};
  ExplainResult r{ex.report(flips, analysis, plan), 0};
  const trace::TraceReader tb = trace::TraceReader::open(plan.b);
  for (const auto* t : {&ta, &tb}) {
    const auto c = nlohmann::json::parse(t->config_json(), nullptr, false);
    if (c.is_object() && c.contains("plan")) {
      r.report->notes.push_back(fmt::format(
          "{} ran under a numerics plan (run --plan, recorded as plan in its config_json), which "
          "no knob carries: its replays and trials run the configuration alone",
          t == &ta ? "A" : "B"));
    }
  }
  return r;
}

void write_explain_reports(const std::filesystem::path& dir, const diff::ExplainReport& r,
                           bool to_stdout, bool quiet) {
  const std::string text = viewer::render_explain_terminal(r, 100);
  write_report_file(text, (dir / "explain.txt").string(), "explain report", kWriteHint);
  write_report_file(viewer::explain_json(r).dump(2) + "\n", (dir / "explain.json").string(),
                    "explain report", kWriteHint);
  write_report_file(viewer::explain_html(r), (dir / "explain.html").string(), "explain report",
                    kWriteHint);
  if (to_stdout) write_stdout(text);
  if (!quiet) {
    print_note("explain: the report in {}/explain.{{txt,json,html}}\n", dir.string());
  }
}

}  // namespace ds
