// The fast float GEMM of the CPU reference: eight output features per AVX2 register, each lane
// summing its own dot product in exactly the order of the scalar loop (docs/numerics.md,
// "Vectorised and threaded execution"), so the results are those of ops_cpu.cpp's matmul bit
// for bit. Row-major (N, K) weights are transposed in registers (eight rows, eight k at a time)
// or, for many rows of x, packed per call; weights packed at set-up (ops.h) are read in place.
#pragma once

#include "common/float_formats.h"
#include "kernels/cpu/weight_read.h"
#include "kernels/ops.h"

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

// One GEMM as the lanes kernel takes it (ops.h Gemm): the weights read through W (const float*,
// or Bf16Ptr / F16Ptr of weight_read.h, 16-bit weights widened in registers, each possibly
// Packed), the bias widened to float (or null), w_col already applied, num.split clamped to 1..K.
template <typename W>
using LanesGemm = Gemm<float*, W, const float*>;

// Output features [n_begin, n_end) of g in float, K cut into num.split parts as in ops::matmul
// (fp32 accumulation only), the result rounded to num.out. Needs gemm_lanes_available().
template <typename W>
void matmul_f32_lanes(const LanesGemm<W>& g, int n_begin, int n_end);

// One query row and head of attention over its keys t0..p: the head's query and output, and its
// KV head's keys and values (row t at k + t * kv_stride, v + t * kv_stride).
template <typename T>
struct HeadRows {
  const T* q;
  T* out;
  const T* k;
  const T* v;
  size_t kv_stride;
  int head_dim, t0, p;
};

// Attention's P.V in float: h.out[d] = sum over t in [t0, p] of prob[t] * v[t][d] for d in
// [0, head_dim / 8 * 8) (the d after the last group of eight are the caller's), each sum from 0
// in t order, one multiply and one add per step (as the scalar loop of ops_cpu.cpp), eight d per
// lane register, the row of out held in registers across t. Needs gemm_lanes_available().
void pv_f32_lanes(const HeadRows<float>& h, const float* prob);

}  // namespace ds::ops
