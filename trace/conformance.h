// Validation on open of a trace whose producer is not driftscope (a `producer` root attribute
// other than driftscope's, e.g. python/driftscope_trace): every attribute and dataset of format
// v1 is checked against docs/trace-format.md before anything is read, so a foreign writer's
// mistake is reported once, naming the first non-conforming dataset or attribute, instead of
// surfacing as a wrong number in a diff.
#pragma once

#include <hdf5.h>

#include <functional>
#include <string>

#include "trace/h5.h"

namespace ds::trace {

// Throws ds::Error "trace 'PATH' (written by PRODUCER) does not conform to format v1: WHAT".
void check_conformance(hid_t file, const std::string& path, const std::string& producer);

// The same checks of one /seq/<i> group (`where`, e.g. "/seq/3"), for traces of any producer:
// attributes prompt_len >= 1, gen_len >= 0, a known stop_reason; tokens of rank 1 holding
// prompt_len + gen_len int32 ids; hidden sites of rank 2, one width, float elements; logits
// datasets of the right ranks and K; every hidden and logits dataset with the same row count,
// tokens - 1 (or the prompt's count, or 0). Throws ds::Error naming the first inconsistency.
// `keep`, when given, receives every dataset the check opened (its path under the group, e.g.
// "hidden/L0/out", its element type, and the open id) so that the caller can read it without
// opening it again.
// `status_may_be_lost`: the file is cut short (TraceReader::cut_short), and a stop_reason that
// cannot be read (its string lay past the cut) counts as "running": only what gen_len vouches
// for must be there.
using KeepDataset = std::function<void(const std::string& rel, NumberFormat elem, h5::Id dataset)>;
void check_sequence(hid_t group, const std::string& where, const KeepDataset& keep = {},
                    bool status_may_be_lost = false);

}  // namespace ds::trace
