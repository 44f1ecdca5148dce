// Backend-neutral op calls of the transformer: pointers, sizes and knobs, no model knowledge.
// The CPU reference (kernels/cpu) implements each for T = float and T = double with plain loops
// and an explicit reduction order, documented per op below and in docs/numerics.md.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ds::ops {

// out[r] = table[ids[r]]                                  out: (n, dim), table: (vocab, dim)
template <typename T>
void embedding(T* out, const T* table, const int32_t* ids, int n, int dim);

// y[r][i] = (x[r][i] * inv_rms) * w[i], inv_rms = 1 / sqrt(sum_i x[r][i]^2 / dim + eps);
// the sum of squares runs over i = 0..dim-1 in order, accumulated in T.   x, y: (rows, dim)
template <typename T>
void rmsnorm(T* y, const T* x, const T* w, int rows, int dim, double eps);

// y[m][n] = (sum_{k=0..K-1} x[m][k] * w[n][k]) + b[n], summed in order of k, accumulated in T;
// the bias (optional, may be null) is added after the sum.    x: (M, K), w: (N, K), y: (M, N)
template <typename T>
void matmul(T* y, const T* x, const T* w, const T* b, int M, int N, int K);

// Rotary embedding, half-split layout: for each head and i < head_dim/2, with c = cos[p][i],
// s = sin[p][i] at the row's position p:  x[i] <- x[i]*c - x[i+h]*s ; x[i+h] <- x[i+h]*c + x[i]*s.
// x: (rows, n_heads * head_dim); cos, sin: (max_pos, head_dim/2)
template <typename T>
void rope(T* x, int rows, int n_heads, int head_dim, const int* positions, const T* cos,
          const T* sin);

// Causal grouped-query attention of `rows` queries against a KV cache. Query row r at position
// positions[r] attends keys t = max(0, p - window + 1) .. p (window 0 = unlimited); query head h
// reads kv head h / (n_heads / n_kv_heads). Scores are (q . k) * scale with the dot product summed
// over d in order; softmax subtracts the max, sums exp() over t in order, divides each term;
// out = sum over t in order of p_t * v_t.
// q, out: (rows, n_heads*head_dim); k_cache, v_cache: (capacity, n_kv_heads*head_dim);
// scratch: at least (max position + 1) values.
template <typename T>
void attention(T* out, const T* q, const T* k_cache, const T* v_cache, int rows,
               const int* positions, int n_heads, int n_kv_heads, int head_dim, int window,
               T scale, T* scratch);

// out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + exp(-x))
template <typename T>
void swiglu(T* out, const T* gate, const T* up, size_t n);

// y[i] = a[i] + b[i] (y may alias a)
template <typename T>
void add(T* y, const T* a, const T* b, size_t n);

}  // namespace ds::ops
