// Tiled attention on tensor cores, FlashAttention-2's order (kernels/ops.h OpNumerics::tile):
// one block of four warps per (tile of up to 64 query rows of one sequence, head); each warp owns
// 16 rows. Per 64-key tile: S = Q K^T and O += P V with mma.sync m16n8k16 (fp16 / bf16 inputs,
// fp32 accumulators), the online softmax on the accumulators in registers. Keys are tiled at
// multiples of 64 of the key index, as the CPU's emulation of the order.
//
// Fragment layouts (PTX ISA, mma.m16n8k16, g = lane / 4, c = lane % 4): A (16 x 16) registers
// hold rows g and g + 8, columns 2c, 2c + 1 and 2c + 8, 2c + 9; B (16 x 8) rows (k) 2c, 2c + 1 and
// 2c + 8, 2c + 9 of column g; C/D (16 x 8, fp32) rows g and g + 8, columns 2c, 2c + 1. So the
// accumulators of two adjacent 8-key score tiles are, packed to 16 bits, the A fragment of P.
#pragma once

#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace ds::cuda {

constexpr int kTileRows = 64;  // query rows per block: 16 per warp
constexpr int kTileKeys = 64;  // keys per tile (kAttentionTile of src/runtime/runtime.h)
constexpr int kTiledThreads = 128;

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// d += a * b for one m16n8k16 tile.
template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1);
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                        uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma16816<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                 uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8 x 8 16-bit matrices from shared memory, transposed: lane L gives the address of row
// L % 8 of matrix L / 8, and r[i] receives matrix i's elements (2c, g) and (2c + 1, g).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ uint32_t lds32(const void* p) {
  return *static_cast<const uint32_t*>(p);
}

// rows x HD values of T from global rows `stride` elements apart into shared rows kStride apart,
// 16 bytes at a time; rows not in [0, valid) are zeros.
template <typename T, int HD, int kStride>
__device__ __forceinline__ void load_tile(T* dst, const T* src, size_t stride, int rows,
                                          int valid) {
  constexpr int kVec = 8;  // 16 bytes of 16-bit values
  constexpr int kPerRow = HD / kVec;
  for (int i = threadIdx.x; i < rows * kPerRow; i += blockDim.x) {
    const int r = i / kPerRow, c = (i % kPerRow) * kVec;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r < valid) v = *reinterpret_cast<const uint4*>(src + r * stride + c);
    *reinterpret_cast<uint4*>(dst + r * kStride + c) = v;
  }
}

// Grid (n_tiles, n_heads). Dynamic shared memory: Q, K and V tiles, (64 + 64 + 64) rows of
// HD + 8 values (the 16-byte pad keeps the fragment loads free of bank conflicts).
template <typename T, int HD>
__global__ void __launch_bounds__(kTiledThreads)
    attention_tiled_kernel(AttentionArgs a, const AttentionTile* tiles) {
  constexpr int kStride = HD + 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* q_s = reinterpret_cast<T*>(smem_raw);
  T* k_s = q_s + kTileRows * kStride;
  T* v_s = k_s + kTileKeys * kStride;

  const AttentionTile tile = tiles[blockIdx.x];
  const int h = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const float scale = static_cast<float>(a.scale);
  const int n_rows = tile.row_end - tile.row0;
  const size_t q_stride = static_cast<size_t>(a.n_heads) * HD;
  const size_t kv_stride = static_cast<size_t>(a.n_kv_heads) * HD;
  const size_t kv_off = static_cast<size_t>(h / (a.n_heads / a.n_kv_heads)) * HD;
  const size_t slot_off = static_cast<size_t>(a.row_slot[tile.row0]) * a.slot_stride;
  const T* k_base = static_cast<const T*>(a.k_cache.p) + slot_off + kv_off;
  const T* v_base = static_cast<const T*>(a.v_cache.p) + slot_off + kv_off;

  // This thread's two rows (g and g + 8 of its warp's 16): positions and first keys; -1 marks a
  // row past the tile, whose every key is masked.
  const int row_a = warp * 16 + g, row_b = row_a + 8;
  const int p_a = row_a < n_rows ? a.positions[tile.row0 + row_a] : -1;
  const int p_b = row_b < n_rows ? a.positions[tile.row0 + row_b] : -1;
  auto first_key = [&](int p) {
    return a.window > 0 && p - a.window + 1 > 0 ? p - a.window + 1 : 0;
  };
  const int t0_a = first_key(p_a), t0_b = first_key(p_b);
  // The block's keys: from the first row's first key to the last row's position.
  const int p_first = a.positions[tile.row0], p_last = a.positions[tile.row_end - 1];
  const int key_lo = first_key(p_first) / kTileKeys * kTileKeys;

  load_tile<T, HD, kStride>(q_s, static_cast<const T*>(a.q.p) + tile.row0 * q_stride + h * HD,
                            q_stride, kTileRows, n_rows);
  __syncthreads();
  uint32_t qa[HD / 16][4];  // this warp's Q rows as A fragments, one per 16 dims
  for (int kk = 0; kk < HD / 16; ++kk) {
    const T* r0 = q_s + (warp * 16 + g) * kStride + kk * 16 + 2 * c;
    const T* r1 = r0 + 8 * kStride;
    qa[kk][0] = lds32(r0);
    qa[kk][1] = lds32(r1);
    qa[kk][2] = lds32(r0 + 8);
    qa[kk][3] = lds32(r1 + 8);
  }

  float o[HD / 8][4];
  for (int dn = 0; dn < HD / 8; ++dn) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.f;
  float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.f, l_b = 0.f;

  for (int k0 = key_lo; k0 <= p_last; k0 += kTileKeys) {
    __syncthreads();  // every warp is done with the previous K and V
    const int keys = min(kTileKeys, p_last + 1 - k0);
    load_tile<T, HD, kStride>(k_s, k_base + k0 * kv_stride, kv_stride, kTileKeys, keys);
    load_tile<T, HD, kStride>(v_s, v_base + k0 * kv_stride, kv_stride, kTileKeys, keys);
    __syncthreads();

    float s[8][4];  // scores of rows g, g + 8 against keys k0 + 8j + 2c, + 1
    for (int j = 0; j < 8; ++j) {
      s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
      for (int kk = 0; kk < HD / 16; ++kk) {
        const T* kr = k_s + (j * 8 + g) * kStride + kk * 16 + 2 * c;
        mma16816<T>(s[j], qa[kk], lds32(kr), lds32(kr + 8));
      }
    }
    float tmax_a = -INFINITY, tmax_b = -INFINITY;
    for (int j = 0; j < 8; ++j) {
      for (int e = 0; e < 4; ++e) {
        const int key = k0 + j * 8 + 2 * c + (e & 1);
        const bool in_a = e < 2;
        const bool valid = in_a ? key >= t0_a && key <= p_a : key >= t0_b && key <= p_b;
        s[j][e] = valid ? __fmul_rn(s[j][e], scale) : -INFINITY;
      }
      tmax_a = fmaxf(tmax_a, fmaxf(s[j][0], s[j][1]));
      tmax_b = fmaxf(tmax_b, fmaxf(s[j][2], s[j][3]));
    }
    for (int x = 1; x <= 2; x <<= 1) {  // the four threads of a row
      tmax_a = fmaxf(tmax_a, __shfl_xor_sync(0xffffffffu, tmax_a, x));
      tmax_b = fmaxf(tmax_b, __shfl_xor_sync(0xffffffffu, tmax_b, x));
    }
    const float mn_a = fmaxf(m_a, tmax_a), mn_b = fmaxf(m_b, tmax_b);
    // A row with no key yet (all masked so far) keeps o = 0, l = 0: exp(-inf - 0) = 0.
    const float use_a = mn_a == -INFINITY ? 0.f : mn_a, use_b = mn_b == -INFINITY ? 0.f : mn_b;
    const float alpha_a = expf(m_a - use_a), alpha_b = expf(m_b - use_b);
    float sum_a = 0.f, sum_b = 0.f;
    for (int j = 0; j < 8; ++j) {
      s[j][0] = expf(s[j][0] - use_a);
      s[j][1] = expf(s[j][1] - use_a);
      s[j][2] = expf(s[j][2] - use_b);
      s[j][3] = expf(s[j][3] - use_b);
      sum_a += s[j][0] + s[j][1];
      sum_b += s[j][2] + s[j][3];
    }
    for (int x = 1; x <= 2; x <<= 1) {
      sum_a += __shfl_xor_sync(0xffffffffu, sum_a, x);
      sum_b += __shfl_xor_sync(0xffffffffu, sum_b, x);
    }
    l_a = l_a * alpha_a + sum_a;
    l_b = l_b * alpha_b + sum_b;
    m_a = mn_a;
    m_b = mn_b;
    for (int dn = 0; dn < HD / 8; ++dn) {
      o[dn][0] *= alpha_a;
      o[dn][1] *= alpha_a;
      o[dn][2] *= alpha_b;
      o[dn][3] *= alpha_b;
    }
    for (int t = 0; t < 4; ++t) {  // keys 16t .. 16t + 15 of the tile
      const uint32_t pa[4] = {
          pack2<T>(s[2 * t][0], s[2 * t][1]), pack2<T>(s[2 * t][2], s[2 * t][3]),
          pack2<T>(s[2 * t + 1][0], s[2 * t + 1][1]), pack2<T>(s[2 * t + 1][2], s[2 * t + 1][3])};
      const int mi = lane / 8, mr = lane % 8;  // this lane's ldmatrix row: matrix mi, row mr
      for (int dn = 0; dn < HD / 8; dn += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, v_s + (16 * t + (mi & 1) * 8 + mr) * kStride + (dn + (mi >> 1)) * 8);
        mma16816<T>(o[dn], pa, b[0], b[1]);
        mma16816<T>(o[dn + 1], pa, b[2], b[3]);
      }
    }
  }

  T* out = static_cast<T*>(a.out.p);
  for (int half = 0; half < 2; ++half) {
    const int row = half == 0 ? row_a : row_b;
    if (row >= n_rows) continue;
    const float l = half == 0 ? l_a : l_b;
    T* orow = out + (tile.row0 + row) * q_stride + h * HD;
    for (int dn = 0; dn < HD / 8; ++dn) {
      const int d = dn * 8 + 2 * c;
      orow[d] = from_f<T>(__fdiv_rn(o[dn][2 * half], l));
      orow[d + 1] = from_f<T>(__fdiv_rn(o[dn][2 * half + 1], l));
    }
  }
}

}  // namespace ds::cuda
