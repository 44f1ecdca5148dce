// Validation on open of a trace whose producer is not driftscope (a `producer` root attribute
// other than driftscope's, e.g. python/driftscope_trace): every attribute and dataset of format
// v1 is checked against docs/trace-format.md before anything is read, so a foreign writer's
// mistake is reported once, naming the first non-conforming dataset or attribute, instead of
// surfacing as a wrong number in a diff.
#pragma once

#include <hdf5.h>

#include <string>

namespace ds::trace {

// Throws ds::Error "trace 'PATH' (written by PRODUCER) does not conform to format v1: WHAT".
void check_conformance(hid_t file, const std::string& path, const std::string& producer);

}  // namespace ds::trace
