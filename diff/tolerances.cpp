// Noise floors by storage format (the table and its reasons are in tolerances.h).
#include "diff/tolerances.h"

#include <algorithm>

namespace ds::diff {
namespace {

double floor_of(NumberFormat e) {
  for (const auto& f : kNoiseFloors) {
    if (f.storage == e) return f.rel_l2;
  }
  return kNoiseFloors[0].rel_l2;  // int32 never holds hidden states; treat as float32
}

}  // namespace

double noise_floor(NumberFormat a, NumberFormat b) {
  return std::max(floor_of(a), floor_of(b));
}

std::string coarser_storage(NumberFormat a, NumberFormat b) {
  return traits(floor_of(a) >= floor_of(b) ? a : b).trace_name;
}

}  // namespace ds::diff
