// The fast float GEMM of the CPU reference: eight output features per AVX2 register, each lane
// summing its own dot product in exactly the order of the scalar loop (docs/numerics.md,
// "Vectorised and threaded execution"), so the results are those of ops_cpu.cpp's matmul bit
// for bit. Row-major (N, K) weights are used where they lie (no packing): eight rows are loaded
// eight k at a time and transposed in registers.
#pragma once

#include "common/float_formats.h"
#include "kernels/cpu/weight_read.h"

namespace ds::ops {

// true when this CPU runs the AVX2 kernel (checked once, at run time).
bool gemm_lanes_available();

// How many blocks of 8 output features one pass of matmul_f32_lanes computes at once for M rows
// of x on weights W (gemm_lanes.cpp): a range of whole passes keeps every pass at full width, so
// callers cut work at multiples of it.
template <typename W>
constexpr int lanes_blocks_per_pass(int M) {
  if constexpr (IsPacked<W>::value) {
    if (M < 4) return std::is_same_v<W, Packed<const float*>> ? 4 : 6;  // decode
  }
  return 2;
}

// Output features [n_begin, n_end) of y = x w^T (+ b) in float, K cut into `splits` parts as in
// ops::matmul (fp32 accumulation only), the result rounded to `out`. Needs gemm_lanes_available().
// W: const float*, or Bf16Ptr / F16Ptr (weight_read.h), 16-bit weights widened in registers.
template <typename W>
void matmul_f32_lanes(float* y, const float* x, int ldx, W w, int ldw, const float* b, int M, int N,
                      int K, int splits, Storage out, int n_begin, int n_end);

// Attention's P.V in float: out[d] = sum over t in [t0, t1) of p[t] * v[t * ld + d] for d in
// [0, dim / 8 * 8) (the d after the last group of eight are the caller's), each sum from 0 in t
// order, one multiply and one add per step (as the scalar loop of ops_cpu.cpp), eight d per lane
// register, the row of out held in registers across t. Needs gemm_lanes_available().
void pv_f32_lanes(float* out, const float* p, const float* v, size_t ld, int t0, int t1, int dim);

}  // namespace ds::ops
