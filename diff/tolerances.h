// Noise floors of the diff, in one table with the reason beside each (STYLE.md §8): the smallest
// relative drift that can be told apart from the rounding of the stored values.
#pragma once

#include <string>

#include "trace/h5.h"

namespace ds::diff {

struct NoiseFloor {
  h5::Elem storage;
  double rel_l2;
  const char* reason;
};

// Each stored element is the real value rounded to nearest in the storage format, i.e. moved by
// at most u·|x| with u = 2^-p the unit roundoff of a p-bit significand. Two runs whose real
// values are equal but that were rounded along different paths can therefore differ by up to
// 2u·|x| per element, so a relative L2 up to 2u is indistinguishable from storage rounding.
// Above it the runs really differ. (Loosening one needs a comment saying why.)
inline constexpr NoiseFloor kNoiseFloors[] = {
    {h5::Elem::F32, 0x1p-23,
     "float32: p = 24, u = 2^-24; two roundings apart: 2u = 2^-23 ~ 1.2e-7"},
    {h5::Elem::F16, 0x1p-10, "float16: p = 11, u = 2^-11; 2u = 2^-10 ~ 9.8e-4"},
    {h5::Elem::BF16, 0x1p-7, "bf16: p = 8, u = 2^-8; 2u = 2^-7 ~ 7.8e-3"},
};

// The floor of a site stored as `a` in one trace and `b` in the other: the coarser of the two.
double noise_floor(h5::Elem a, h5::Elem b);
// "float32", "float16", "bf16": the coarser storage of the two.
std::string coarser_storage(h5::Elem a, h5::Elem b);

// Probability masses below this are treated as zero in the lumped "rest" bucket of the
// approximate KL: 1 − Σ top-K probabilities computed from float32 logits and a float32 lse
// carries a rounding error of a few K·2^-24; 1e-6 is well above that for K up to 1000s.
inline constexpr double kRestMassFloor = 1e-6;

}  // namespace ds::diff
