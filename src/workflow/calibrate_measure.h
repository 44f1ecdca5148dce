// The calibration's measures: each replay diffed against the reference (the noise floor's sums,
// diff/noise_sums.h) into FLOOR.calibrate/measures/replay-K.json, its trace then removed; and the
// floor built from every measure (diff/noise_floor.h) and written (trace/floor_file.h).
#pragma once

#include <filesystem>
#include <string>

#include "diff/noise_floor.h"
#include "src/workflow/calibrate_plan.h"

namespace ds {

// A measure as JSON, and back (throws ds::Error for text that is not one).
std::string measure_json(const diff::ReplayMeasure& m);
diff::ReplayMeasure parse_measure(const std::string& text, const std::string& where);

// Whether replay k (>= 1) is measured: its measure file holds seed k.
bool replay_measured(const std::filesystem::path& dir, int k);
// Whether the reference is recorded: a complete trace of A's configuration with every probe.
bool reference_done(const std::filesystem::path& dir, const CalibratePlan& p);

// Whether the reference replays A bit for bit over the calibrated sequences (every logits row and
// every hidden site both traces hold): "" when it does, else what differs first. On the CPU it
// does; a difference means A was not recorded as its configuration says (the floor then measures
// drift around the reference, not around A).
std::string reference_mismatch(const std::filesystem::path& dir, const CalibratePlan& p,
                               const trace::TraceReader& a);

// Measures replay k against the reference (both traces complete), writes its measure, and
// removes its trace. Throws ds::Error when either trace cannot be read.
void measure_replay(const std::filesystem::path& dir, const CalibratePlan& p, int k);

// The floor of replays 1..N (each measured), of trace `a`, written to p.floor (replaced only
// with `replace`). Returns what was written.
trace::FloorFile write_calibrated_floor(const std::filesystem::path& dir, const CalibratePlan& p,
                                        const trace::TraceReader& a, bool replace);

// What a floor records of trace `a` beside the measures: its model and configuration, digests,
// the calibrated sequences' tokens (calibrate, and tests that build floors in one process).
diff::FloorSource floor_source(const trace::TraceReader& a, const std::vector<int>& sequences,
                               const std::string& perturbation);

}  // namespace ds
