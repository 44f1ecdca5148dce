// Noise floors of the diff, in one table with the reason beside each (as llm.c keeps the
// thresholds of test_gpt2.cu): the smallest relative drift that can be told apart from the
// rounding of the stored values.
#pragma once

#include <string>

#include "common/number_format.h"

namespace ds::diff {

struct NoiseFloor {
  NumberFormat storage;
  double rel_l2;
  const char* reason;
};

// Each stored element is the real value rounded to nearest in the storage format, i.e. moved by
// at most u·|x| with u = 2^-p the unit roundoff of a p-bit significand. Two runs whose real
// values are equal but that were rounded along different paths can therefore differ by up to
// 2u·|x| per element, so a relative L2 up to 2u is indistinguishable from storage rounding.
// Above it the runs really differ. (Loosening one needs a comment saying why.)
inline constexpr NoiseFloor kNoiseFloors[] = {
    {NumberFormat::f32, 0x1p-23,
     "float32: p = 24, u = 2^-24; two roundings apart: 2u = 2^-23 ~ 1.2e-7"},
    {NumberFormat::f16, 0x1p-10, "float16: p = 11, u = 2^-11; 2u = 2^-10 ~ 9.8e-4"},
    {NumberFormat::bf16, 0x1p-7, "bf16: p = 8, u = 2^-8; 2u = 2^-7 ~ 7.8e-3"},
};

// Each floor is 2u = 2^(1-p) with p from the number-format table: a floor that is not (loosened
// on purpose) must say so here.
constexpr bool floors_are_two_roundings() {
  for (const NoiseFloor& f : kNoiseFloors) {
    double two_u = 1;
    for (int i = 1; i < traits(f.storage).significand_bits; ++i) two_u /= 2;
    if (f.rel_l2 != two_u) return false;
  }
  return true;
}
static_assert(floors_are_two_roundings(), "kNoiseFloors: 2u of each format's significand");

// The floor of a site stored as `a` in one trace and `b` in the other: the coarser of the two.
double noise_floor(NumberFormat a, NumberFormat b);
// "float32", "float16", "bf16" (its name in a trace): the coarser storage of the two.
std::string coarser_storage(NumberFormat a, NumberFormat b);

// Probability masses below this are treated as zero in the lumped "rest" bucket of the
// approximate KL: 1 − Σ top-K probabilities computed from float32 logits and a float32 lse
// carries a rounding error of a few K·2^-24; 1e-6 is well above that for K up to 1000s.
inline constexpr double kRestMassFloor = 1e-6;

}  // namespace ds::diff
