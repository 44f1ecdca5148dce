// The float64 references of tests/ops/op_references.h: plain loops, no code from kernels/.
#include "tests/ops/op_references.h"

#include <algorithm>
#include <cmath>

namespace ds::test::ref {

std::vector<double> gemm(const std::vector<float>& x, const std::vector<float>& w,
                         const std::vector<float>* b, int M, int N, int K) {
  std::vector<double> y(static_cast<size_t>(M) * N);
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      double s = b ? (*b)[n] : 0.0;
      for (int k = 0; k < K; ++k) {
        s += static_cast<double>(x[static_cast<size_t>(m) * K + k]) *
             w[static_cast<size_t>(n) * K + k];
      }
      y[static_cast<size_t>(m) * N + n] = s;
    }
  }
  return y;
}

std::vector<double> rmsnorm(const std::vector<float>& x, const std::vector<float>& w, int dim,
                            double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / dim; ++r) {
    double ss = 0;
    for (int i = 0; i < dim; ++i) ss += static_cast<double>(x[r * dim + i]) * x[r * dim + i];
    const double scale = 1.0 / std::sqrt(ss / dim + eps);
    for (int i = 0; i < dim; ++i) y[r * dim + i] = x[r * dim + i] * scale * w[i];
  }
  return y;
}

std::vector<double> swiglu(const std::vector<float>& gate, const std::vector<float>& up) {
  std::vector<double> y(gate.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const double g = gate[i];
    y[i] = g / (1.0 + std::exp(-g)) * up[i];
  }
  return y;
}

std::vector<double> add(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<double> y(a.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<double>(a[i]) + b[i];
  return y;
}

std::vector<double> embedding(const std::vector<float>& table, const std::vector<int32_t>& ids,
                              int dim) {
  std::vector<double> y;
  for (int32_t id : ids) {
    for (int i = 0; i < dim; ++i) y.push_back(table[static_cast<size_t>(id) * dim + i]);
  }
  return y;
}

std::vector<double> all_reduce(const std::vector<float>& parts, int tp) {
  const size_t n = parts.size() / tp;
  std::vector<double> y(n, 0.0);
  for (int s = 0; s < tp; ++s) {
    for (size_t i = 0; i < n; ++i) y[i] += parts[s * n + i];
  }
  return y;
}

std::vector<double> rope(const std::vector<float>& x, int heads, int head_dim,
                         const std::vector<int32_t>& pos, const std::vector<float>& cos,
                         const std::vector<float>& sin) {
  std::vector<double> y(x.begin(), x.end());
  const int half = head_dim / 2;
  for (size_t r = 0; r < pos.size(); ++r) {
    for (int h = 0; h < heads; ++h) {
      const size_t base = (r * heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const double c = cos[static_cast<size_t>(pos[r]) * half + i];
        const double s = sin[static_cast<size_t>(pos[r]) * half + i];
        const double a = x[base + i], b = x[base + half + i];
        y[base + i] = a * c - b * s;
        y[base + half + i] = b * c + a * s;
      }
    }
  }
  return y;
}

std::vector<double> attention(const std::vector<float>& q, const float* k, const float* v,
                              const std::vector<int32_t>& pos, int n_heads, int n_kv, int head_dim,
                              int window, double scale) {
  const int q_dim = n_heads * head_dim, kv_dim = n_kv * head_dim;
  std::vector<double> out(q.size(), 0.0);
  for (size_t r = 0; r < pos.size(); ++r) {
    const int p = pos[r], first = window > 0 ? std::max(0, p - window + 1) : 0;
    for (int h = 0; h < n_heads; ++h) {
      const int kvh = h / (n_heads / n_kv);
      const float* qh = &q[r * q_dim + static_cast<size_t>(h) * head_dim];
      std::vector<double> score;
      for (int t = first; t <= p; ++t) {
        const float* kt = k + static_cast<size_t>(t) * kv_dim + static_cast<size_t>(kvh) * head_dim;
        double s = 0;
        for (int d = 0; d < head_dim; ++d) s += static_cast<double>(qh[d]) * kt[d];
        score.push_back(s * scale);
      }
      const double top = *std::max_element(score.begin(), score.end());
      double sum = 0;
      for (double& s : score) sum += (s = std::exp(s - top));
      double* o = &out[r * q_dim + static_cast<size_t>(h) * head_dim];
      for (int t = first; t <= p; ++t) {
        const float* vt = v + static_cast<size_t>(t) * kv_dim + static_cast<size_t>(kvh) * head_dim;
        for (int d = 0; d < head_dim; ++d) o[d] += score[t - first] / sum * vt[d];
      }
    }
  }
  return out;
}

namespace {
// Half an ulp of a format, relative.
double unit(Storage t) {
  switch (t) {
    case Storage::f16:
      return std::ldexp(1.0, -11);
    case Storage::bf16:
      return std::ldexp(1.0, -8);
    case Storage::native:
      break;
  }
  return std::ldexp(1.0, -24);
}
}  // namespace

double bound(Storage out, int out_roundings, Storage acc, int acc_roundings) {
  const double uo = unit(out), ua = unit(acc);
  return 4 * (out_roundings * uo * uo + acc_roundings * ua * ua);
}

}  // namespace ds::test::ref
