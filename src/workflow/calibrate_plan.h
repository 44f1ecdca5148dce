// What `driftscope calibrate A.h5 -o FLOOR` runs: A's recorded configuration replayed N + 1 times
// on A's tokens with every probe (a reference in A's own order, then N replays each under a plan
// of another valid reduction order, or stochastic rounding, drawn from its seed), for the
// calibrated sequences and the other members of their batch groups; the plan and its state in
// the work folder FLOOR.calibrate/calibrate.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "src/experiment/run_config.h"
#include "src/workflow/replays.h"
#include "trace/reader.h"

namespace ds {

// One replay: k = 0 the reference (A's own order, no plan), k = 1..N a perturbed replay of seed k.
struct CalibrateRun {
  int k = 0;
  std::string status = "pending";  // pending, done (measured, or the reference recorded),
                                   // recorded (a replay waiting for the reference), missing,
                                   // submitted
};

struct CalibratePlan {
  std::string a;               // absolute path of A
  std::string floor;           // absolute path of the floor file
  std::string perturbation;    // reorder, sr, reorder+sr
  int runs = 99;               // N
  std::vector<int> sequences;  // calibrated: A's indices, ascending
  std::vector<int> replay;     // replayed: whole batch groups holding them, ascending
  RunConfig config;            // A's
  ReplayModel model;           // A's, verified against its recorded digests
  std::string hidden_dtype = "f32";
  int topk = 20;
  std::vector<CalibrateRun> state;  // k = 0..N
  std::vector<std::string> slurm_jobs;
};

// The plan for trace `a` (complete, written by driftscope run or sweep on the CPU; refused with a
// hint otherwise): the sequences of `seqs` (empty: all), N = `runs`, the perturbation class.
CalibratePlan make_calibrate_plan(const trace::TraceReader& a, const std::filesystem::path& floor,
                                  const std::vector<int>& seqs, int runs,
                                  const std::string& perturbation);

// The work folder of a floor: FLOOR.calibrate/ beside it.
std::filesystem::path calibrate_dir(const std::filesystem::path& floor);

// Files of the work folder: the replayed prompts (JSONL, forced on A's tokens), A's configuration,
// run k's plan (k >= 1), trace and measure, and the state.
std::filesystem::path calibrate_prompts(const std::filesystem::path& dir);
std::filesystem::path calibrate_config(const std::filesystem::path& dir);
std::filesystem::path run_plan(const std::filesystem::path& dir, int k);
std::filesystem::path run_trace(const std::filesystem::path& dir, int k);
std::filesystem::path run_measure(const std::filesystem::path& dir, int k);
std::string run_name(int k);  // "reference", "replay-7"

// The plan file of replay k: {"reorder_seed": k} and/or {"sr_seed": k}.
std::string replay_plan_json(const std::string& perturbation, int k);

// The prompts file: one forced line per replayed sequence, its whole generation.
std::string calibrate_prompts_text(const CalibratePlan& p, const trace::TraceReader& a);

// The `driftscope run` of run k.
ChildRun calibrate_child(const std::filesystem::path& dir, const CalibratePlan& p, int k);

void write_calibrate_state(const std::filesystem::path& dir, const CalibratePlan& p);
// Takes the statuses and Slurm jobs of DIR/calibrate.json when it holds the same calibration (A,
// sequences, perturbation; N may differ: the replays it has are kept); throws ds::Error with a
// hint when it holds another or is not readable.
void merge_calibrate_state(const std::filesystem::path& dir, CalibratePlan& p);

}  // namespace ds
