// Noise floors by storage format (the table and its reasons are in tolerances.h).
#include "diff/tolerances.h"

#include <algorithm>

namespace ds::diff {
namespace {

double floor_of(h5::Elem e) {
  for (const auto& f : kNoiseFloors) {
    if (f.storage == e) return f.rel_l2;
  }
  return kNoiseFloors[0].rel_l2;  // int32 never holds hidden states; treat as float32
}

}  // namespace

double noise_floor(h5::Elem a, h5::Elem b) {
  return std::max(floor_of(a), floor_of(b));
}

std::string coarser_storage(h5::Elem a, h5::Elem b) {
  return h5::elem_name(floor_of(a) >= floor_of(b) ? a : b);
}

}  // namespace ds::diff
