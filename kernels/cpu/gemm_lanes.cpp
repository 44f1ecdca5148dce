// AVX2 kernel of gemm_lanes.h, compiled for any x86-64 (target attribute + run-time check) and a
// stub elsewhere. Separate multiplies and adds (never FMA): each lane i of an accumulator holds
// the partial sum of output feature n + i and receives x[k] * w[n + i][k] for k in order.
#include "kernels/cpu/gemm_lanes.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/chunks.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace ds::ops {

#if defined(__x86_64__)

namespace {

#define DS_AVX2 __attribute__((target("avx2,f16c"), always_inline)) inline

// From this many rows of x on, blocks are packed once and reused by every row (prefill).
constexpr int kPackRows = 8;

// r[j] <- (r[0][j], ..., r[7][j]): column j of the 8x8 tile (the standard unpack/shuffle/permute).
DS_AVX2 void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Eight consecutive weights of one row as floats: float32 loaded, bf16 / fp16 widened (exact).
DS_AVX2 __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
DS_AVX2 __m256 load8(Bf16Ptr p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p.p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
DS_AVX2 __m256 load8(F16Ptr p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p.p)));
}

// acc <- acc + x * col, rounded after the multiply and after the add (no FMA).
DS_AVX2 __m256 mul_add(__m256 acc, float x, __m256 col) {
  return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(x), col));
}

// total[i][b] for rows m .. m + MR - 1 of g's x and its NB blocks of 8 weight rows from output
// feature n: per split-K part, sum over the part's k in order (eight at a time from a transposed
// tile, the rest one at a time), then the part added to the running total (the first part is
// the total).
template <int MR, int NB, typename W>
__attribute__((target("avx2,f16c"))) void tile(const LanesGemm<W>& g, int m, int n,
                                               __m256 total[MR][NB]) {
  const float* x = g.x + static_cast<size_t>(m) * g.ldx;
  const W w = g.w + static_cast<size_t>(n) * g.ldw;
  const int ldx = g.ldx, ldw = g.ldw;
  for (int i = 0; i < MR; ++i)
    for (int b = 0; b < NB; ++b) total[i][b] = _mm256_setzero_ps();
  for (int c = 0; c < g.num.split; ++c) {
    const Chunk ch = chunk_of(g.K, g.num.split, c);
    const int k0 = ch.begin, k1 = ch.end;
    __m256 acc[MR][NB];
    for (int i = 0; i < MR; ++i)
      for (int b = 0; b < NB; ++b) acc[i][b] = _mm256_setzero_ps();
    int k = k0;
    for (; k + 8 <= k1; k += 8) {
      for (int b = 0; b < NB; ++b) {
        const W wb = w + (static_cast<size_t>(8 * b) * ldw + k);
        __m256 r[8];
        for (int i = 0; i < 8; ++i) r[i] = load8(wb + static_cast<size_t>(i) * ldw);
        transpose8(r);
        for (int i = 0; i < MR; ++i) {
          const float* xm = x + static_cast<size_t>(i) * ldx + k;
          for (int j = 0; j < 8; ++j) acc[i][b] = mul_add(acc[i][b], xm[j], r[j]);
        }
      }
    }
    for (; k < k1; ++k) {
      for (int b = 0; b < NB; ++b) {
        const W wb = w + (static_cast<size_t>(8 * b) * ldw + k);
        const __m256 col = _mm256_setr_ps(
            wb[0], wb[ldw], wb[2 * static_cast<size_t>(ldw)], wb[3 * static_cast<size_t>(ldw)],
            wb[4 * static_cast<size_t>(ldw)], wb[5 * static_cast<size_t>(ldw)],
            wb[6 * static_cast<size_t>(ldw)], wb[7 * static_cast<size_t>(ldw)]);
        for (int i = 0; i < MR; ++i)
          acc[i][b] = mul_add(acc[i][b], x[static_cast<size_t>(i) * ldx + k], col);
      }
    }
    for (int i = 0; i < MR; ++i)
      for (int b = 0; b < NB; ++b)
        total[i][b] = c == 0 ? acc[i][b] : _mm256_add_ps(total[i][b], acc[i][b]);
  }
}

// Rows m .. m + MR - 1, output features n .. n + 8 NB - 1 of g's y: the bias added last, then
// the storage rounding, as in the scalar matmul.
template <int MR, int NB, typename G>
__attribute__((target("avx2,f16c"))) void store(const G& g, int m, int n, __m256 total[MR][NB]) {
  const float* bias = g.bias != nullptr ? g.bias + n : nullptr;
  for (int i = 0; i < MR; ++i) {
    for (int b = 0; b < NB; ++b) {
      __m256 v = total[i][b];
      if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + 8 * b));
      float* yb = g.y + static_cast<size_t>(m + i) * g.N + n + 8 * b;
      _mm256_storeu_ps(yb, v);
      if (g.num.out != Storage::native) {
        for (int j = 0; j < 8; ++j) yb[j] = ds::round_to(yb[j], g.num.out);
      }
    }
  }
}

template <int MR, int NB, typename W>
__attribute__((target("avx2,f16c"))) void run_tile(const LanesGemm<W>& g, int m, int n) {
  __m256 total[MR][NB];
  tile<MR, NB>(g, m, n, total);
  store<MR, NB>(g, m, n, total);
}

// Eight weight rows transposed into `pk` (K, 8): pk[8k + i] = w[i][k], so one load gives the
// column the lanes need at k. Packed once per block and reused by every row of x.
template <typename W>
__attribute__((target("avx2,f16c"))) void pack_block(float* pk, W w, int ldw, int K) {
  int k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i) r[i] = load8(w + (static_cast<size_t>(i) * ldw + k));
    transpose8(r);
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(pk + 8 * static_cast<size_t>(k + j), r[j]);
  }
  for (; k < K; ++k) {
    for (int i = 0; i < 8; ++i)
      pk[8 * static_cast<size_t>(k) + i] = w[static_cast<size_t>(i) * ldw + k];
  }
}

// As tile(), from packed blocks: per k one load per block, shared by the MR rows of x from m.
template <int MR, int NB, typename W, typename G>
__attribute__((target("avx2,f16c"))) void tile_packed(const G& g, int m, const W pk[NB],
                                                      __m256 total[MR][NB]) {
  const float* x = g.x + static_cast<size_t>(m) * g.ldx;
  for (int i = 0; i < MR; ++i)
    for (int b = 0; b < NB; ++b) total[i][b] = _mm256_setzero_ps();
  for (int c = 0; c < g.num.split; ++c) {
    const Chunk ch = chunk_of(g.K, g.num.split, c);
    const int k0 = ch.begin, k1 = ch.end;
    __m256 acc[MR][NB];
    for (int i = 0; i < MR; ++i)
      for (int b = 0; b < NB; ++b) acc[i][b] = _mm256_setzero_ps();
    for (int k = k0; k < k1; ++k) {
      __m256 col[NB];
      for (int b = 0; b < NB; ++b) col[b] = load8(pk[b] + 8 * static_cast<size_t>(k));
      for (int i = 0; i < MR; ++i) {
        const float xv = x[static_cast<size_t>(i) * g.ldx + k];
        for (int b = 0; b < NB; ++b) acc[i][b] = mul_add(acc[i][b], xv, col[b]);
      }
    }
    for (int i = 0; i < MR; ++i)
      for (int b = 0; b < NB; ++b)
        total[i][b] = c == 0 ? acc[i][b] : _mm256_add_ps(total[i][b], acc[i][b]);
  }
}

// Every row of g's x against NB packed blocks starting at output feature n (four rows of x at a
// time only for NB <= 2: 4 x 4 accumulators would not fit the 16 registers).
template <int NB, typename W, typename G>
__attribute__((target("avx2,f16c"))) void rows_packed(const G& g, const W pk[NB], int n) {
  int m = 0;
  if constexpr (NB <= 2) {
    for (; m + 4 <= g.M; m += 4) {
      __m256 total[4][NB];
      tile_packed<4, NB, W>(g, m, pk, total);
      store<4, NB>(g, m, n, total);
    }
  }
  for (; m < g.M; ++m) {
    __m256 total[1][NB];
    tile_packed<1, NB, W>(g, m, pk, total);
    store<1, NB>(g, m, n, total);
  }
}

// Rows [m0, m1) of x against weight rows [n0, n1) (a multiple of 8 rows): four rows of x share
// each transposed tile; a single row works on two blocks at once (two independent add chains).
// Two, not four: a single row (decode) is bound by memory, and 16 weight rows streamed side by
// side keep the hardware prefetchers ahead where 32 did not, and software prefetch made it slower
// (measured in bench/RESULTS.md, "CPU reference: threads, AVX2 lanes and mapped weights").
template <typename W>
void rows_blocks(const LanesGemm<W>& g, int m0, int m1, int n0, int n1) {
  int m = m0;
  for (; m + 4 <= m1; m += 4) {
    for (int n = n0; n < n1; n += 8) run_tile<4, 1>(g, m, n);
  }
  for (; m < m1; ++m) {
    int n = n0;
    for (; n + 16 <= n1; n += 16) run_tile<1, 2>(g, m, n);
    for (; n < n1; n += 8) run_tile<1, 1>(g, m, n);
  }
}

// Weights packed at set-up (ops.h): every row of x against two blocks at a time, read in place
// (each block one sequential stream; one load per k feeds eight outputs).
template <typename W>
void matmul_packed(const LanesGemm<Packed<W>>& g, int n_begin, int n_end) {
  auto block = [&](int n) { return g.w.base + static_cast<size_t>(n / 8) * g.ldw * 8; };
  int n = n_begin;
  if (g.M < 4) {
    // few rows of x (decode): four blocks at once, four independent add chains per row of x
    // (two leave 16-bit weights waiting on the adds' latency), six for 16-bit weights (which
    // widen each value before the chain); each block is one sequential stream, so four or six
    // streams, not the 32 of row-major weights (bench/RESULTS.md, "four blocks at once")
    static_assert(lanes_blocks_per_pass<Packed<W>>(1) == (std::is_same_v<W, const float*> ? 4 : 6));
    if constexpr (!std::is_same_v<W, const float*>) {
      for (; n + 48 <= n_end; n += 48) {
        const W pk[6] = {block(n),      block(n + 8),  block(n + 16),
                         block(n + 24), block(n + 32), block(n + 40)};
        rows_packed<6, W>(g, pk, n);
      }
    }
    for (; n + 32 <= n_end; n += 32) {
      const W pk[4] = {block(n), block(n + 8), block(n + 16), block(n + 24)};
      rows_packed<4, W>(g, pk, n);
    }
  }
  for (; n + 16 <= n_end; n += 16) {
    const W pk[2] = {block(n), block(n + 8)};
    rows_packed<2, W>(g, pk, n);
  }
  for (; n < n_end; n += 8) {
    const W pk[1] = {block(n)};
    rows_packed<1, W>(g, pk, n);
  }
}

// Row-major weights: transposed in registers, or packed per call for many rows of x.
template <typename W>
void matmul_rowmajor(const LanesGemm<W>& g, int n_begin, int n_end) {
  if (g.M >= kPackRows) {
    // many rows of x (prefill): pack two blocks at a time once, stream every row over them
    const int K = g.K;
    thread_local std::vector<float> packed;
    packed.resize(16 * static_cast<size_t>(std::max(1, K)));
    const float* const pk[2] = {packed.data(), packed.data() + 8 * static_cast<size_t>(K)};
    const float* const pk1[1] = {packed.data()};
    int n = n_begin;
    for (; n + 16 <= n_end; n += 16) {
      pack_block(packed.data(), g.w + static_cast<size_t>(n) * g.ldw, g.ldw, K);
      pack_block(packed.data() + 8 * static_cast<size_t>(K),
                 g.w + static_cast<size_t>(n + 8) * g.ldw, g.ldw, K);
      rows_packed<2, const float*>(g, pk, n);
    }
    for (; n < n_end; n += 8) {
      pack_block(packed.data(), g.w + static_cast<size_t>(n) * g.ldw, g.ldw, K);
      rows_packed<1, const float*>(g, pk1, n);
    }
    return;
  }
  constexpr int kRowTile = 32;  // rows of x kept hot while a range of weight rows streams past
  for (int m0 = 0; m0 < g.M; m0 += kRowTile) {
    rows_blocks(g, m0, std::min(g.M, m0 + kRowTile), n_begin, n_end);
  }
}

// h.out[d0 .. d0 + 8 NA) of pv_f32_lanes: NA accumulators live across every t.
template <int NA>
__attribute__((target("avx2,f16c"))) void pv_rows(const HeadRows<float>& h, const float* prob,
                                                  int d0) {
  __m256 acc[NA];
  for (int a = 0; a < NA; ++a) acc[a] = _mm256_setzero_ps();
  for (int t = h.t0; t <= h.p; ++t) {
    const float* vt = h.v + static_cast<size_t>(t) * h.kv_stride + d0;
    for (int a = 0; a < NA; ++a) acc[a] = mul_add(acc[a], prob[t], _mm256_loadu_ps(vt + 8 * a));
  }
  for (int a = 0; a < NA; ++a) _mm256_storeu_ps(h.out + d0 + 8 * a, acc[a]);
}

}  // namespace

void pv_f32_lanes(const HeadRows<float>& h, const float* prob) {
  int d = 0;
  for (; d + 64 <= h.head_dim; d += 64) pv_rows<8>(h, prob, d);
  for (; d + 8 <= h.head_dim; d += 8) pv_rows<1>(h, prob, d);
}

bool gemm_lanes_available() {
  // F16C (fp16 weights widened in registers): CPUID leaf 1, ECX bit 29 (clang's
  // __builtin_cpu_supports does not know "f16c"); every AVX2 CPU so far has it
  static const bool ok = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool f16c = __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
    return __builtin_cpu_supports("avx2") && f16c;
  }();
  return ok;
}

template <typename W>
void matmul_f32_lanes(const LanesGemm<W>& g, int n_begin, int n_end) {
  if constexpr (IsPacked<W>::value) {
    matmul_packed(g, n_begin, n_end);
  } else {
    matmul_rowmajor(g, n_begin, n_end);
  }
}

#else  // not x86-64: the scalar loops serve (ops_cpu.cpp never calls the stub)

bool gemm_lanes_available() {
  return false;
}
template <typename W>
void matmul_f32_lanes(const LanesGemm<W>&, int, int) {}
void pv_f32_lanes(const HeadRows<float>&, const float*) {}

#endif

template void matmul_f32_lanes<const float*>(const LanesGemm<const float*>&, int, int);
template void matmul_f32_lanes<Bf16Ptr>(const LanesGemm<Bf16Ptr>&, int, int);
template void matmul_f32_lanes<F16Ptr>(const LanesGemm<F16Ptr>&, int, int);
template void matmul_f32_lanes<Packed<const float*>>(const LanesGemm<Packed<const float*>>&, int,
                                                     int);
template void matmul_f32_lanes<Packed<Bf16Ptr>>(const LanesGemm<Packed<Bf16Ptr>>&, int, int);
template void matmul_f32_lanes<Packed<F16Ptr>>(const LanesGemm<Packed<F16Ptr>>&, int, int);

}  // namespace ds::ops
