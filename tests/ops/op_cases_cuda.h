// The op table with its CUDA half (tests/ops/op_cases.h's `cuda` call of every case), for the
// targets built with CUDA: driftscope_cuda_tests and bench_ops. Needs a device only to run.
#pragma once

#include <vector>

#include "tests/ops/op_cases.h"

namespace ds::test {

// op_cases() with each case's CUDA call set.
const std::vector<OpCase>& op_cases_with_cuda();

}  // namespace ds::test
