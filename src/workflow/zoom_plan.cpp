// The zoom's plan: which sequences, how far, with which batch neighbours; DIR/zoom.json.
#include "src/workflow/zoom_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "common/error.h"
#include "common/json_error.h"
#include "common/output_file.h"
#include "src/console/command_line.h"
#include "src/model/text_file.h"
#include "src/workflow/recorded_model.h"
#include "src/workflow/sweep_plan.h"

namespace ds {
namespace {

// The zoomed sequences: --seq as given (each in both traces), else every flipped one.
std::vector<ZoomSeq> chosen_seqs(const diff::Report& d, const std::vector<int>& seqs,
                                 const trace::TraceReader& a) {
  std::map<int, const diff::SequenceReport*> by_index;
  for (const auto& s : d.sequences) by_index[s.index] = &s;
  if (!d.only_in_a.empty() || !d.only_in_b.empty()) {
    throw Error(fmt::format("the traces hold different sequences ({} only in A, {} only in B)",
                            d.only_in_a.size(), d.only_in_b.size()),
                "zoom compares two runs of the same prompts: pass two traces of one sweep");
  }
  std::vector<ZoomSeq> out;
  const std::set<int> wanted(seqs.begin(), seqs.end());
  for (int i : wanted) {
    if (!by_index.count(i)) {
      throw Error(fmt::format("sequence {} is not in both traces", i),
                  fmt::format("--seq takes indices of sequences both traces hold (A holds {})",
                              a.sequence_indices().size()));
    }
  }
  for (const auto& [i, s] : by_index) {
    if (s->verdict == diff::Verdict::prompts_differ) {
      throw Error(fmt::format("the traces' prompts differ (sequence {})", i),
                  "zoom compares two runs of the same prompts: pass two traces of one sweep");
    }
    if (!wanted.empty() ? wanted.count(i) == 0 : !s->first_flip.has_value()) continue;
    ZoomSeq z;
    z.seq = i;
    z.flip_step = s->first_flip ? s->first_flip->step : -1;
    out.push_back(z);
  }
  if (out.empty()) {
    throw Error("no sequence flipped: A and B choose the same tokens everywhere",
                "pass --seq LIST to zoom into sequences that drift without flipping "
                "(driftscope diff A.h5 B.h5 shows the drift)");
  }
  return out;
}

// A side of the zoom: a driftscope trace's configuration, or a recorder trace's replay (whose
// batch groups and device matter to the plan and the attribution).
ZoomSide make_side(const std::string& name, const std::string& source,
                   const trace::TraceReader& t) {
  ZoomSide s;
  s.name = name;
  s.source = source;
  if (written_by_recorder(t)) {
    s.recorder = recorder_replay(t);
    s.config.batch = s.recorder->batch;
    // the recorder's device ("cpu", "cuda", "cuda:1", "mps"): what matters is whether it is the CPU
    s.config.device = s.recorder->device == "cpu" ? Device::cpu : Device::cuda;
  } else {
    s.config = recorded_config(t);
  }
  return s;
}

}  // namespace

ZoomPlan make_zoom_plan(const trace::TraceReader& a, const trace::TraceReader& b,
                        const diff::Report& d, const std::vector<int>& seqs, int after,
                        bool whole_blocks) {
  ZoomPlan p;
  p.a = std::filesystem::absolute(a.path()).lexically_normal().string();
  p.b = std::filesystem::absolute(b.path()).lexically_normal().string();
  p.after = after;
  // resolved against A's recorded working folder: the replays run from any folder
  const RecordedModel recorded = recorded_model(a);
  p.model = recorded.model.string();
  if (recorded.tokenizer) p.tokenizer = recorded.tokenizer->path.string();
  p.side_a = make_side("a", p.a, a);
  p.side_b = make_side("b", p.b, b);
  p.seqs = chosen_seqs(d, seqs, a);
  // Batch groups are static runs of `batch` consecutive prompts: the blocks of the lcm of both
  // batches are groups (or unions of groups) on both sides, so replaying whole blocks in order
  // keeps every forward pass's rows (and with them the GEMM shapes) as they were.
  const int block =
      std::lcm(std::max(1, p.side_a.config.batch), std::max(1, p.side_b.config.batch));
  std::map<int, int> block_steps;  // block -> generated steps its zoomed sequences need
  for (auto& z : p.seqs) {
    const int gen = a.sequence(z.seq).gen_len;
    // in 64 bits: --after is bounded by the command, a library caller may pass anything
    z.replayed = z.flip_step < 0
                     ? gen
                     : static_cast<int>(std::min<int64_t>(
                           gen, int64_t{z.flip_step} + 1 + std::max<int64_t>(after, 0)));
    block_steps[z.seq / block] = std::max(block_steps[z.seq / block], z.replayed);
  }
  const std::vector<int> all = a.sequence_indices();
  std::map<int, int> zoomed;
  for (const auto& z : p.seqs) zoomed[z.seq] = z.replayed;
  for (int i : all) {
    const auto it = block_steps.find(i / block);
    if (it == block_steps.end()) continue;
    const int r = static_cast<int>(p.replay.size());
    p.replay.push_back(i);
    if (zoomed.count(i)) {
      for (auto& z : p.seqs) {
        if (z.seq == i) z.replay_index = r;
      }
      const int n = whole_blocks ? std::min(a.sequence(i).gen_len, it->second) : zoomed[i];
      p.forced_len_a.push_back(n);
      p.forced_len_b.push_back(n);
    } else {  // a neighbour: its own tokens, as long as the block's zoomed sequences run
      p.forced_len_a.push_back(std::min(a.sequence(i).gen_len, it->second));
      p.forced_len_b.push_back(std::min(b.sequence(i).gen_len, it->second));
    }
  }
  return p;
}

std::string replay_prompts(const ZoomPlan& p, const trace::TraceReader& a,
                           const trace::TraceReader& side, bool side_is_a) {
  std::set<int> zoomed;
  for (const auto& z : p.seqs) zoomed.insert(z.seq);
  std::string out;
  for (size_t r = 0; r < p.replay.size(); ++r) {
    const int i = p.replay[r];
    const trace::SequenceInfo s = (zoomed.count(i) ? a : side).sequence(i);
    const int n = (side_is_a ? p.forced_len_a : p.forced_len_b)[r];
    out += forced_prompt_line(s.tokens, s.prompt_len, n);
  }
  return out;
}

std::filesystem::path side_trace(const std::filesystem::path& dir, const ZoomSide& s) {
  return dir / (s.name + ".h5");
}

std::filesystem::path side_prompts(const std::filesystem::path& dir, const ZoomSide& s) {
  return dir / ("prompts-" + s.name + ".jsonl");
}

bool replay_done(const std::filesystem::path& dir, const ZoomSide& s) {
  return s.recorder ? recorder_replay_done(side_trace(dir, s), *s.recorder)
                    : trace_done(side_trace(dir, s), s.config, "all");
}

std::filesystem::path zoom_json_path(const std::filesystem::path& dir) {
  return dir / "zoom.json";
}

namespace {

nlohmann::ordered_json plan_json(const ZoomPlan& p) {
  nlohmann::ordered_json j;
  j["format"] = "driftscope-zoom";
  j["version"] = 1;
  j["a"] = p.a;
  j["b"] = p.b;
  j["after"] = p.after;
  j["model"] = p.model;
  j["tokenizer"] = p.tokenizer;
  nlohmann::ordered_json seqs = nlohmann::ordered_json::array();
  for (const auto& z : p.seqs) {
    seqs.push_back({{"seq", z.seq},
                    {"flip_step", z.flip_step < 0 ? nlohmann::ordered_json()
                                                  : nlohmann::ordered_json(z.flip_step)},
                    {"replayed_tokens", z.replayed},
                    {"replay_index", z.replay_index}});
  }
  j["sequences"] = seqs;
  j["replay"] = p.replay;
  j["forced_a"] = p.forced_len_a;
  j["forced_b"] = p.forced_len_b;
  return j;
}

}  // namespace

void write_zoom_state(const std::filesystem::path& dir, const ZoomPlan& p) {
  nlohmann::ordered_json j = plan_json(p);
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const ZoomSide* s : {&p.side_a, &p.side_b}) {
    nlohmann::ordered_json run = {{"name", s->name}, {"source", s->source}};
    if (s->recorder) {  // replayed by the recorder: its command line, no configuration file
      const auto abs = std::filesystem::absolute(dir);
      run["config"] = nullptr;
      run["command"] =
          shell_command(recorder_argv(*s->recorder, side_prompts(abs, *s), side_trace(abs, *s)));
    } else {
      run["config"] = "configs/" + s->name + ".toml";
    }
    run["prompts"] = "prompts-" + s->name + ".jsonl";
    run["trace"] = s->name + ".h5";
    run["status"] = s->status;
    runs.push_back(run);
  }
  j["runs"] = runs;
  j["slurm_jobs"] = p.slurm_jobs;
  write_file_or_fail(zoom_json_path(dir), j.dump(2) + "\n");
}

void merge_zoom_state(const std::filesystem::path& dir, ZoomPlan& p) {
  const auto path = zoom_json_path(dir);
  const char* hint =
      "zoom.json is the state `driftscope zoom` keeps in its -o folder; choose "
      "another -o folder";
  // bounded, and a regular file: a folder, a FIFO or a huge file is refused, never waited on
  const std::string text = read_regular_text_file(path, kMaxStateFileBytes, "zoom file", hint);
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        json_parse_failure(fmt::format("'{}' is not a valid zoom file", path.string()), text, e),
        hint);
  }
  if (!j.is_object()) {
    throw Error(fmt::format("'{}' is not a valid zoom file: not a JSON object", path.string()),
                hint);
  }
  nlohmann::ordered_json mine = plan_json(p);
  for (const auto& [k, v] : mine.items()) {
    if (!j.contains(k) || j[k] != v) {
      throw Error(
          fmt::format("'{}' holds another zoom (other traces, sequences or --after)", dir.string()),
          "choose another -o folder, or give the same traces and options to resume");
    }
  }
  try {
    p.slurm_jobs = j.value("slurm_jobs", std::vector<std::string>{});
    for (const auto& r : j.at("runs")) {
      ZoomSide& s = r.at("name") == "a" ? p.side_a : p.side_b;
      s.status = r.value("status", "pending");
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        json_parse_failure(fmt::format("'{}' is not a valid zoom file", path.string()), text, e),
        hint);
  }
}

}  // namespace ds
