// Backend-neutral op calls of the transformer: pointers, sizes and numerics knobs, no model
// knowledge. The CPU reference (kernels/cpu) implements each for T = float and T = double with
// plain loops in the reduction order documented here (and in docs/numerics.md). Reduced
// precision is emulated on T = float: `Storage` says to which storage format an op's output is
// rounded (round to nearest even), exactly where a GPU kernel would store it; native keeps T.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/float_formats.h"

namespace ds::ops {

using ds::Storage;  // common/float_formats.h: where an op's output (and a weight) is stored

// Rounds n values in place to the storage format.
template <typename T>
void round_to(T* x, size_t n, Storage r);
// Rounds n values in place to bf16 and moves each one bf16 step up (dir > 0) or down
// (common/float_formats.h bf16_step): the output perturbation tests plant at one op.
template <typename T>
void step_bf16(T* x, size_t n, int dir);

// What a configuration decides at one op call: an entry of the per-op numerics plan
// (src/runtime/numerics_plan.h), part of each op's call description below. Every op rounds its
// output to `out`; a GEMM also reads accum_f16 and split (split-K); attention all of them.
struct OpNumerics {
  Storage out = Storage::native;      // the output rounded to this storage format
  bool accum_f16 = false;             // sums accumulate in fp16 (every partial sum rounded)
  int split = 1;                      // GEMM: split-K parts; attention: split-KV chunks
  int tile = 0;                       // attention: FlashAttention-2's tile of keys; 0: row-wise
  Storage p_round = Storage::native;  // attention: p (or exp(s - m)) rounded to this before P.V
};

// An op writes its output through A and reads its inputs through In<A>: const T* for a T* (the
// CPU), the same type for a backend's device handle (the CUDA ops' DeviceData).
template <typename A>
struct InputOf {
  using type = A;
};
template <typename T>
struct InputOf<T*> {
  using type = const T*;
};
template <typename A>
using In = typename InputOf<A>::type;

// One GEMM call: y (M, N) = x (M, K; rows ldx apart) times w^T (w: rows ldw apart, from column
// w_col on: a tensor-parallel rank's shard), plus the bias when there is one (B{}: none). The one
// description of a GEMM: the forward pass builds it, the CPU and CUDA kernels take it, the op
// table's cases build it and the benchmarks time it. W: the weights as the backend reads them
// (StoredWeights or a T pointer on the CPU); B: the bias's (the same, unless a kernel has widened
// it).
//
// How it reduces: K is split into num.split contiguous chunks (kernels/chunks.h: sizes differ by
// at most one, larger first); each chunk is summed from k = start upwards in the accumulator
// (fp32 = T, or fp16 with num.accum_f16: every partial sum rounded to fp16, as HGEMM with fp16
// accumulation); the chunk sums are added in chunk order; the bias (if any) is added; the result
// is rounded to num.out.
template <typename A, typename W, typename B = W>
struct Gemm {
  A y;
  In<A> x;
  W w;
  B bias;
  int M = 0, N = 0, K = 0;
  int ldx = 0, ldw = 0;  // row strides of x and w, in elements
  size_t w_col = 0;      // first column of w used
  OpNumerics num;
};

// y[m][n] = sum_k x[m][k] * w[n][k] (+ b[n]), as Gemm describes.
template <typename T>
void matmul(const Gemm<T*, const T*>& g);

// Float weights as a checkpoint stores them: float32 values (format native), or the bit patterns
// of bf16 / fp16 values (format bf16 / f16), which the float CPU ops widen to float as they read
// them. Widening is exact, so every result is the same bits as from a float32 copy of the
// weights; no copy is made (docs/numerics.md, "Weights as stored").
// A matrix is row-major (N, K) with rows ldw apart, or `packed` (pack_weights below): the layout
// changes, never a value or the order in which the ops sum them.
struct StoredWeights {
  const void* data = nullptr;  // null: absent (a bias)
  Storage format = Storage::native;
  bool packed = false;
  // The values from element `offset` on (in storage order).
  StoredWeights at(size_t offset) const {
    const size_t bytes = format == Storage::native ? 4 : 2;
    return {static_cast<const char*>(data) + offset * bytes, format, packed};
  }
  // The matrix from column `c` on (a tensor-parallel rank's shard; rows keep their stride).
  StoredWeights column(size_t c) const { return at(packed ? 8 * c : c); }
};

// The packed layout of an (N, K) matrix: blocks of 8 rows, the last padded with zero rows; block
// b holds for each k the 8 values w[8b .. 8b+7][k] side by side, so element (n, k) lies at
// ((n / 8) * K + k) * 8 + n % 8. The CPU's fast GEMM then loads the 8 outputs' weights at k with
// one load, with nothing to transpose. packed_values(N, K) values; pack_weights writes them (in
// w's format) from a row-major w (rows K apart).
size_t packed_values(int N, int K);
void pack_weights(void* out, StoredWeights w, int N, int K);

// The float ops on stored weights: as matmul, embedding and rmsnorm on float, with w, b and the
// table read as stored.
using StoredGemm = Gemm<float*, StoredWeights>;
void matmul(const StoredGemm& g);
void embedding(float* out, StoredWeights table, const int32_t* ids, int n, int dim);

// Matmuls that read none of each other's outputs (q, k and v of one input) as one job of the
// CPU's threads, so they wait for each other once instead of once each; every output is the same
// bits as from matmul alone (the order of a sum never depends on which thread computes it).
// (A pointer and a count, not a std::span: the CUDA sources include this header as C++17.)
void matmul_group(const StoredGemm* calls, size_t n);

// One RMSNorm call: y[r][i] = round((x[r][i] * inv_rms) * w[i]) for rows r of dim values,
// inv_rms = 1 / sqrt(sum_i x[r][i]^2 / dim + eps); the sum of squares runs over i = 0..dim-1 in
// order, accumulated in T; rounded to num.out.
template <typename A, typename W>
struct Rmsnorm {
  A y;
  In<A> x;
  W w;
  int rows = 0, dim = 0;
  double eps = 1e-5;
  OpNumerics num;
};
template <typename T>
void rmsnorm(const Rmsnorm<T*, const T*>& r);
void rmsnorm(const Rmsnorm<float*, StoredWeights>& r);

// Tensor-parallel all-reduce of the row-parallel layers (o_proj, down_proj): rank s's partial
// result is the n values at parts + s * n; y = their sum, each addition rounded to `out`, in the
// given order:
//   ring: ((p0 + p1) + p2) + ...
//   tree: neighbours level by level, (p0 + p1) + (p2 + p3), ...; an odd one out moves up unchanged.
// tp = 1 copies p0. parts is clobbered (the tree reduces in place); y must not overlap parts.
enum class AllReduce { ring, tree };
template <typename T>
void all_reduce(T* y, T* parts, int tp, size_t n, AllReduce order, Storage out);

// out[r] = table[ids[r]]                                  out: (n, dim), table: (vocab, dim)
template <typename T>
void embedding(T* out, const T* table, const int32_t* ids, int n, int dim);

// One rotary-embedding call, half-split layout: for each row, head and i < head_dim/2, with
// c = cos[p][i], s = sin[p][i] at the row's position p:  x[i] <- x[i]*c - x[i+h]*s ;
// x[i+h] <- x[i+h]*c + x[i]*s, then rounded to num.out.
// x: (rows, n_heads * head_dim), in place; cos, sin: (max_pos, head_dim/2)
template <typename A, typename Table>
struct Rope {
  A x;
  int rows = 0, n_heads = 0, head_dim = 0;
  const int* positions = nullptr;
  Table cos, sin;
  OpNumerics num;
};
template <typename T>
void rope(const Rope<T*, const T*>& r);

// One attention call: causal grouped-query attention of `rows` queries, each against its
// sequence's KV cache. Query row r at position positions[r] attends keys t = max(0, p - window +
// 1) .. p (window 0 = unlimited) of the cache at k_cache + row_slot[r] * slot_stride (row_slot
// null: every row reads k_cache); query head h reads kv head h / (n_heads / n_kv_heads).
// q, out: (rows, n_heads*head_dim); caches: (capacity, n_kv_heads*head_dim) per slot.
// max_keys and row_splits are read by the CUDA kernels only (the scratch's key stride; each row's
// own split, 0 for a row another kernel computes); the CPU takes one sequence per call.
//
// How it reduces over keys (num):
//  split = 1: scores s_t = (q . k_t) * scale (dot summed over d in order); softmax subtracts the
//    max, sums exp() over t in order, divides each term; p_t rounded to p_round; out = sum over
//    t in order of p_t * v_t.
//  split > 1 (split-KV / flash-decoding): keys cut into `split` contiguous chunks; per chunk
//    c: m_c = max s, l_c = sum exp(s - m_c), o_c = sum exp(s - m_c) (rounded to p_round) * v;
//    merged in chunk order with m = max m_c: out = sum o_c e^(m_c - m) / sum l_c e^(m_c - m).
//  tile > 0 and split <= 1 (FlashAttention-2's order, `--kernel attention=tiled`): keys in tiles
//    of `tile` keys aligned at multiples of `tile` (key index), visited in order; m = -inf, l = 0,
//    o = 0; per tile (its keys t0..p only): m' = max(m, max s), alpha = exp(m - m'),
//    e_t = exp(s_t - m'), l = l * alpha + (sum of e_t in key order), and per d
//    o = o * alpha + sum over the tile's keys in order of round_p(e_t) * v_t (the accumulator
//    starts at o * alpha); m = m'. At the end out = o / l. (On the GPU the tile's dot products
//    and P.V sums run on tensor cores, whose order inside a 16-wide step is the hardware's.)
//  accum_f16: dot products and the weighted sums of v accumulate in fp16. out rounded to `out`.
template <typename A>
struct Attention {
  A out;
  In<A> q, k_cache, v_cache;
  int rows = 0;
  const int* positions = nullptr;
  const int* row_slot = nullptr;
  size_t slot_stride = 0;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int window = 0;    // sliding window; 0 = unlimited
  double scale = 1;  // 1 / sqrt(head_dim), converted to the compute type
  int max_keys = 0;
  const int* row_splits = nullptr;
  OpNumerics num;
};
// scratch: at least 2 * (max position + 1) + head_dim values.
template <typename T>
void attention(const Attention<T*>& a, T* scratch);

// out[i] = round(silu(gate[i]) * up[i]), silu(x) = x / (1 + exp(-x))
template <typename T>
void swiglu(T* out, const T* gate, const T* up, size_t n, Storage r);

// y[i] = round(a[i] + b[i]) (y may alias a)
template <typename T>
void add(T* y, const T* a, const T* b, size_t n, Storage r);

// The split-K a BLAS-like library would pick for an (M, N, K) GEMM (gemm_policy=heuristic):
// a GEMV kernel for M = 1 reduces K in 4 parts, small-M kernels (M <= 16) split K in 2, large
// tiles do not split; never fewer than 16 K values per part.
int heuristic_split_k(int M, int N, int K);

// The split-KV count a flash-decoding kernel would pick (attn_splits=auto, heuristic policy):
// enough key chunks of >= 64 keys to fill 132 SMs with (sequences * heads) blocks, at most 16.
int heuristic_attn_splits(int kv_len, int sequences, int n_heads);

}  // namespace ds::ops
