// CPU reference implementation of kernels/ops.h: plain loops in the documented reduction order.
#include <cmath>
#include <cstring>

#include "kernels/ops.h"

namespace ds::ops {

template <typename T>
void embedding(T* out, const T* table, const int32_t* ids, int n, int dim) {
  for (int r = 0; r < n; ++r) {
    std::memcpy(out + static_cast<size_t>(r) * dim, table + static_cast<size_t>(ids[r]) * dim,
                sizeof(T) * dim);
  }
}

template <typename T>
void rmsnorm(T* y, const T* x, const T* w, int rows, int dim, double eps) {
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + static_cast<size_t>(r) * dim;
    T* yr = y + static_cast<size_t>(r) * dim;
    T ss = 0;
    for (int i = 0; i < dim; ++i) ss += xr[i] * xr[i];
    const T inv = T(1) / std::sqrt(ss / T(dim) + T(eps));
    for (int i = 0; i < dim; ++i) yr[i] = (xr[i] * inv) * w[i];
  }
}

template <typename T>
void matmul(T* y, const T* x, const T* w, const T* b, int M, int N, int K) {
  for (int m = 0; m < M; ++m) {
    const T* xm = x + static_cast<size_t>(m) * K;
    for (int n = 0; n < N; ++n) {
      const T* wn = w + static_cast<size_t>(n) * K;
      T acc = 0;
      for (int k = 0; k < K; ++k) acc += xm[k] * wn[k];
      y[static_cast<size_t>(m) * N + n] = b != nullptr ? acc + b[n] : acc;
    }
  }
}

template <typename T>
void rope(T* x, int rows, int n_heads, int head_dim, const int* positions, const T* cos,
          const T* sin) {
  const int half = head_dim / 2;
  for (int r = 0; r < rows; ++r) {
    const T* c = cos + static_cast<size_t>(positions[r]) * half;
    const T* s = sin + static_cast<size_t>(positions[r]) * half;
    for (int h = 0; h < n_heads; ++h) {
      T* v = x + (static_cast<size_t>(r) * n_heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const T x0 = v[i];
        const T x1 = v[i + half];
        v[i] = x0 * c[i] - x1 * s[i];
        v[i + half] = x1 * c[i] + x0 * s[i];
      }
    }
  }
}

template <typename T>
void attention(T* out, const T* q, const T* k_cache, const T* v_cache, int rows,
               const int* positions, int n_heads, int n_kv_heads, int head_dim, int window,
               T scale, T* scratch) {
  const int group = n_heads / n_kv_heads;
  const size_t q_stride = static_cast<size_t>(n_heads) * head_dim;
  const size_t kv_stride = static_cast<size_t>(n_kv_heads) * head_dim;
  for (int r = 0; r < rows; ++r) {
    const int p = positions[r];
    const int t0 = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
    for (int h = 0; h < n_heads; ++h) {
      const T* qh = q + r * q_stride + static_cast<size_t>(h) * head_dim;
      const size_t kv_off = static_cast<size_t>(h / group) * head_dim;
      T max_score = -INFINITY;
      for (int t = t0; t <= p; ++t) {
        const T* kt = k_cache + t * kv_stride + kv_off;
        T dot = 0;
        for (int d = 0; d < head_dim; ++d) dot += qh[d] * kt[d];
        scratch[t] = dot * scale;
        if (scratch[t] > max_score) max_score = scratch[t];
      }
      T sum = 0;
      for (int t = t0; t <= p; ++t) {
        scratch[t] = std::exp(scratch[t] - max_score);
        sum += scratch[t];
      }
      for (int t = t0; t <= p; ++t) scratch[t] /= sum;
      T* oh = out + r * q_stride + static_cast<size_t>(h) * head_dim;
      for (int d = 0; d < head_dim; ++d) oh[d] = 0;
      for (int t = t0; t <= p; ++t) {
        const T* vt = v_cache + t * kv_stride + kv_off;
        for (int d = 0; d < head_dim; ++d) oh[d] += scratch[t] * vt[d];
      }
    }
  }
}

template <typename T>
void swiglu(T* out, const T* gate, const T* up, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const T g = gate[i];
    out[i] = (g / (T(1) + std::exp(-g))) * up[i];
  }
}

template <typename T>
void add(T* y, const T* a, const T* b, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

#define DS_INSTANTIATE(T)                                                                     \
  template void embedding<T>(T*, const T*, const int32_t*, int, int);                         \
  template void rmsnorm<T>(T*, const T*, const T*, int, int, double);                         \
  template void matmul<T>(T*, const T*, const T*, const T*, int, int, int);                   \
  template void rope<T>(T*, int, int, int, const int*, const T*, const T*);                   \
  template void attention<T>(T*, const T*, const T*, const T*, int, const int*, int, int, int, \
                             int, T, T*);                                                     \
  template void swiglu<T>(T*, const T*, const T*, size_t);                                    \
  template void add<T>(T*, const T*, const T*, size_t);

DS_INSTANTIATE(float)
DS_INSTANTIATE(double)

}  // namespace ds::ops
