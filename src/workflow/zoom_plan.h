// What `driftscope zoom A.h5 B.h5` replays: the sequences that flipped (or --seq), each up to its
// first flip plus --after tokens, under A's and B's recorded configurations, teacher-forced on A's
// tokens; the other members of their batch groups ride along (on their own tokens) so that every
// forward pass holds the rows it held in the original runs. The plan and its state: DIR/zoom.json.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "diff/report.h"
#include "src/experiment/run_config.h"
#include "src/workflow/replays.h"
#include "src/workflow/zoom_recorder.h"
#include "trace/reader.h"

namespace ds {

struct ZoomSeq {
  int seq = 0;           // index in A and B
  int flip_step = -1;    // generated step of the first flip in A vs B; -1: none (--seq)
  int replayed = 0;      // generated tokens of A replayed (flip + 1 + after, at most A's)
  int replay_index = 0;  // its index in the replay traces
};

struct ZoomSide {
  std::string name;    // "a" or "b"
  std::string source;  // absolute path of the original trace
  RunConfig config;    // its recorded configuration (of a recorder trace: batch, device)
  std::optional<RecorderReplay> recorder;  // a trace of the Python recorder, replayed by it
  std::string status = "pending";          // pending, done, missing, submitted
};

struct ZoomPlan {
  std::string a, b;  // absolute paths
  int after = 0;
  // recorded in A, resolved against its working folder (absolute paths; tokenizer may be empty)
  std::string model, tokenizer;
  std::vector<ZoomSeq> seqs;  // ascending
  std::vector<int> replay;    // original indices replayed, ascending (zoomed and neighbours)
  std::vector<int> forced_len_a, forced_len_b;  // per replay index: generated tokens forced
  ZoomSide side_a, side_b;
  std::vector<std::string> slurm_jobs;
};

// The plan from the two traces and the diff of A vs B (`d`, every sequence): `seqs` when given,
// else every flipped sequence. Throws ds::Error with a hint when there is nothing to zoom (no
// flip), a --seq is not in both traces, or the prompts differ. With `whole_blocks` (explain), a
// zoomed sequence is forced as long as its block's longest zoomed one (on A's tokens), as its
// neighbours are, so that every pass up to each flip holds the rows it held in the original runs.
ZoomPlan make_zoom_plan(const trace::TraceReader& a, const trace::TraceReader& b,
                        const diff::Report& d, const std::vector<int>& seqs, int after,
                        bool whole_blocks = false);

// The JSONL prompts of one side's replay: per replayed sequence {"ids": prompt, "forced": tokens}:
// A's tokens for a zoomed sequence, the side's own for a neighbour.
std::string replay_prompts(const ZoomPlan& p, const trace::TraceReader& a,
                           const trace::TraceReader& side, bool side_is_a);

// DIR/<side>.h5 and DIR/prompts-<side>.jsonl: a side's replay and its prompts.
std::filesystem::path side_trace(const std::filesystem::path& dir, const ZoomSide& s);
std::filesystem::path side_prompts(const std::filesystem::path& dir, const ZoomSide& s);

// Whether DIR holds a complete replay of side `s` with every probe: of its recorded configuration
// by driftscope, or by its recorder with the same options.
bool replay_done(const std::filesystem::path& dir, const ZoomSide& s);

std::filesystem::path zoom_json_path(const std::filesystem::path& dir);
void write_zoom_state(const std::filesystem::path& dir, const ZoomPlan& p);
// The plan of DIR/zoom.json when it holds the same zoom as `p` (statuses and jobs taken from
// it); throws ds::Error with a hint when it holds another zoom or is not readable.
void merge_zoom_state(const std::filesystem::path& dir, ZoomPlan& p);

}  // namespace ds
