// The attribution report of a configuration B against a reference trace A, from the command line
// (attribute, zoom): the model check, B's shadowed run and the report builder's wiring.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "diff/attribution.h"
#include "src/experiment/run_config.h"
#include "src/workflow/loaded_model.h"
#include "trace/reader.h"

namespace ds {

// Throws ds::Error with a hint when A records other model files than the loaded model's.
void check_attribution_model(const trace::TraceReader& a, const LoadedModel& lm);

// Runs B (`rc`, device cpu) teacher-forced on A's tokens with every layer shadowed, and builds
// one report per entry of `groups` (each a list of A's sequence indices; an empty list: every
// sequence). Attention and MLP are told apart when A holds every L<l>/resid_mid.
std::vector<diff::AttributionReport> attribute_groups(
    const LoadedModel& lm, const trace::TraceReader& a, const RunConfig& rc,
    const std::vector<std::vector<int>>& groups,
    const std::function<void(int seq, int n_seqs)>& progress = {});

}  // namespace ds
