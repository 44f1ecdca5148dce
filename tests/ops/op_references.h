// Independent float64 references of the CPU ops (kernels/ops.h), the obvious loops in the order
// a textbook writes them, sharing no code with kernels/, and the bound a float op is held to
// against them. The op table (op_cases.cpp) gives each case its reference and bound.
#pragma once

#include <cstdint>
#include <vector>

#include "common/float_formats.h"

namespace ds::test::ref {

// y[m][n] = sum_k x[m][k] w[n][k] (+ b[n])                     x: (M, K), w: (N, K), y: (M, N)
std::vector<double> gemm(const std::vector<float>& x, const std::vector<float>& w,
                         const std::vector<float>* b, int M, int N, int K);
// y = x / sqrt(mean(x^2) + eps) * w, per row of dim values
std::vector<double> rmsnorm(const std::vector<float>& x, const std::vector<float>& w, int dim,
                            double eps);
// silu(gate) * up
std::vector<double> swiglu(const std::vector<float>& gate, const std::vector<float>& up);
std::vector<double> add(const std::vector<float>& a, const std::vector<float>& b);
// rows of table picked by ids                                      table: (vocab, dim)
std::vector<double> embedding(const std::vector<float>& table, const std::vector<int32_t>& ids,
                              int dim);
// sum over tp blocks of n values
std::vector<double> all_reduce(const std::vector<float>& parts, int tp);
// half-split rotary embedding of x: (rows, heads * head_dim); cos, sin: (max_pos, head_dim / 2)
std::vector<double> rope(const std::vector<float>& x, int heads, int head_dim,
                         const std::vector<int32_t>& pos, const std::vector<float>& cos,
                         const std::vector<float>& sin);
// causal GQA softmax(q k^T * scale) v of rows at pos against one sequence's k, v:
// (capacity, n_kv * head_dim); keys max(0, p - window + 1) .. p (window 0: all)
std::vector<double> attention(const std::vector<float>& q, const float* k, const float* v,
                              const std::vector<int32_t>& pos, int n_heads, int n_kv, int head_dim,
                              int window, double scale);

// Normalized-MSE bound of a float op against the exact value. Each rounding errs by at most
// half an ulp (relative) of its format, and independent roundings add their squares: an output
// stored out_roundings times in `out` and built by acc_roundings operations rounded to `acc`
// (fp32 for native) is within out_roundings u_out^2 + acc_roundings u_acc^2. The factor 4 covers
// partial sums larger than the result (cancellation) and small outputs where a few values carry
// the mean. It catches a wrong or missing term (nmse ~1/K) except in long fp16 accumulations,
// whose own rounding is that large; there the order tests (tests/kernels/test_*_order.cpp) and
// the CUDA ops' bit-exactness carry the check.
double bound(Storage out, int out_roundings, Storage acc, int acc_roundings);

}  // namespace ds::test::ref
