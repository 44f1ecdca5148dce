// A numerics plan as a file, for `driftscope run --plan FILE`: what explain's and calibrate's
// trials run under (src/runtime/numerics_plan.h). JSON, docs/cli.md "Numerics plans":
//   {"format": "driftscope-plan", "version": 1,
//    "a_shapes": [[rows, seqs], ...],      the run's own side: its original run's pass shapes
//    "b": {run configuration},             a second side (optional)
//    "b_ops": ["L3/q_proj", ...] | ["all"], the ops that take the second side
//    "b_shapes": [[rows, seqs], ...],
//    "reorder_seed": N}                    another valid reduction order at every op (optional)
// Shapes are per pass of the run, in order; a pass past the list decides from its own shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/experiment/run_config.h"
#include "src/runtime/numerics_plan.h"

namespace ds {

struct PlanSpec {
  std::vector<PassShape> a_shapes;
  std::optional<RunConfig> b;
  std::vector<std::string> b_ops;  // op names (numerics_plan.h op_id_name), or {"all"}
  std::vector<PassShape> b_shapes;
  std::optional<uint64_t> reorder_seed;
};

// The spec of `text`, the contents of file `where` (named in errors). Throws ds::Error with a
// hint for anything that is not such a file: JSON, the format and version, the fields' types, a
// configuration that does not validate, b_ops without b.
PlanSpec parse_plan_spec(const std::string& text, const std::string& where);
std::string plan_spec_json(const PlanSpec& s);

// The plan of `s` for a run of configuration `own` on a model of n_layers layers: ops in b_ops
// round and reduce as side b decides (and take its test perturbation, test_perturb, when it
// names one of them); the weights are the run's own (side a's format). Throws
// ds::Error for an op name the model does not have, or a second side on another device.
NumericsPlan make_plan(const PlanSpec& s, const RunConfig& own, int n_layers);

}  // namespace ds
