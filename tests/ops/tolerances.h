// Thresholds of a CUDA op against the CPU op, one table, a reason beside each (llm.c
// test_gpt2.cu habit); the op table (tests/ops/op_cases.h) gives each case one of them.
// The metric is the normalized MSE of ggml's test-backend-ops: mse(gpu, cpu) / mse(cpu, 0).
#pragma once

#include "common/float_formats.h"

namespace ds::test {

enum class Match {
  exact,     // same operations in the same order with the same roundings: bit-identical
  reordered  // a reduction in another order, or expf/logf of the device vs std::exp/log
};

// Normalized-MSE threshold for an op whose output is stored in `t`.
inline double nmse_threshold(Storage t, Match m) {
  if (m == Match::exact) return 0.0;  // any difference is a bug: the kernel mirrors the reference
  switch (t) {
    // fp32: a reordered sum of K terms errs by ~sqrt(K) * 6e-8 relative; for K <= 4096 that is
    // <= 4e-6, squared 1.6e-11. 1e-10 leaves room without hiding a wrong term (a wrong or missing
    // term gives nmse ~1/K >= 2e-4).
    case Storage::native:
      return 1e-10;
    // fp16 output: both sides round the same fp32 value except where the reordering crosses a
    // rounding boundary, moving that output by one fp16 ulp: at most 2^-10 relative (squared
    // 9.5e-7), usually far less. 2e-6 passes even every output moved by one ulp, and still fails
    // a wrong or missing term (nmse ~1/K >= 2.4e-4 for K <= 4096).
    case Storage::f16:
      return 2e-6;
    // bf16: one ulp is at most 2^-7 relative (squared 6.1e-5); bound as for fp16.
    case Storage::bf16:
      return 1.2e-4;
  }
  return 0.0;
}

// TF32 tensor cores round the GEMM inputs to 10 mantissa bits (2^-11 relative per product):
// errors like fp16 inputs with fp32 accumulation.
inline constexpr double kTf32Nmse = 1e-6;

}  // namespace ds::test
