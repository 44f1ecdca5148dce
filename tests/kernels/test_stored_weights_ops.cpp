// The float CPU ops on 16-bit weights as stored (ops::StoredWeights: bf16 or fp16 bit patterns
// widened where they are read) give the bits the same ops give on a float32 copy of those weights,
// widened here by common/float_formats.h: for every bit pattern class (normals, fp16 subnormals,
// zeros of both signs, infinities), every GEMM path (the reference loops, the threaded scalar
// loops, the AVX2 lanes with their in-register and packed paths and the N mod 8 remainder),
// split-K, a 16-bit bias and rounded outputs, and for the embedding and rmsnorm.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "common/float_formats.h"
#include "kernels/cpu/cpu_exec.h"
#include "kernels/ops.h"

namespace {

// n random 16-bit patterns of every class (NaN excluded: a NaN weight is refused at load).
std::vector<uint16_t> random_halves(size_t n, ds::Storage format, std::mt19937& rng) {
  std::vector<uint16_t> v(n);
  for (auto& h : v) {
    do {
      h = static_cast<uint16_t>(rng());
      if (rng() % 16 == 0) h &= 0x83ff;  // fp16 subnormals / bf16 values near zero
    } while (format == ds::Storage::f16 ? (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0
                                        : (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0);
    // keep products finite mostly: shrink large exponents (bf16 reaches 3e38)
    if (format == ds::Storage::bf16 && (h & 0x7f80) > 0x4300) h = (h & 0x807f) | 0x3f00;
  }
  return v;
}

std::vector<float> widened(const std::vector<uint16_t>& v, ds::Storage format) {
  std::vector<float> out(v.size());
  ds::widen(v.data(), out.data(), v.size(), format);
  return out;
}

struct ExecGuard {
  ~ExecGuard() {
    ds::ops::set_cpu_kernels(ds::ops::CpuKernels::simd);
    ds::ops::set_cpu_threads(0);
  }
};

struct Execution {
  ds::ops::CpuKernels kernels;
  int threads;
};
constexpr Execution kExecutions[] = {{ds::ops::CpuKernels::reference, 1},
                                     {ds::ops::CpuKernels::scalar, 3},
                                     {ds::ops::CpuKernels::simd, 1},
                                     {ds::ops::CpuKernels::simd, 3}};

}  // namespace

namespace {

using ds::ops::OpNumerics;

OpNumerics gemm_numerics(ds::Storage out, int split) {
  OpNumerics g;
  g.out = out;
  g.split = split;
  return g;
}

// The call descriptions of ops::matmul, on float32 weights and on weights as stored.
void matmul_f32(float* y, const float* x, int ldx, const float* w, int ldw, const float* b, int M,
                int N, int K, OpNumerics g) {
  ds::ops::matmul<float>(ds::ops::Gemm<float*, const float*>{y, x, w, b, M, N, K, ldx, ldw, 0, g});
}
ds::ops::StoredGemm stored_gemm(float* y, const float* x, int ldx, ds::ops::StoredWeights w,
                                int ldw, ds::ops::StoredWeights b, int M, int N, int K,
                                OpNumerics g) {
  return {y, x, w, b, M, N, K, ldx, ldw, 0, g};
}

}  // namespace

TEST_CASE("matmul on bf16 and fp16 weights as stored equals matmul on their float32 widening",
          "[kernels][stored]") {
  ExecGuard guard;
  std::mt19937 rng(29);
  for (ds::Storage format : {ds::Storage::bf16, ds::Storage::f16}) {
    for (int M : {1, 5, 13}) {
      for (int N : {3, 8, 21, 40}) {
        for (int K : {1, 7, 19, 64}) {
          const int ldw = K + 3;
          const auto w16 = random_halves(static_cast<size_t>(N) * ldw, format, rng);
          const auto b16 = random_halves(static_cast<size_t>(N), format, rng);
          const auto w32 = widened(w16, format), b32 = widened(b16, format);
          std::vector<float> x(static_cast<size_t>(M) * K);
          for (float& v : x) v = std::uniform_real_distribution<float>(-2, 2)(rng);
          for (int split : {1, 3}) {
            for (bool bias : {false, true}) {
              for (ds::Storage out : {ds::Storage::native, ds::Storage::bf16}) {
                for (const Execution& e : kExecutions) {
                  ds::ops::set_cpu_kernels(e.kernels);
                  ds::ops::set_cpu_threads(e.threads);
                  const OpNumerics g = gemm_numerics(out, split);
                  std::vector<float> y32(static_cast<size_t>(M) * N), y16(y32.size());
                  matmul_f32(y32.data(), x.data(), K, w32.data(), ldw, bias ? b32.data() : nullptr,
                             M, N, K, g);
                  const ds::ops::StoredWeights bw =
                      bias ? ds::ops::StoredWeights{b16.data(), format} : ds::ops::StoredWeights{};
                  ds::ops::matmul(stored_gemm(y16.data(), x.data(), K, {w16.data(), format}, ldw,
                                              bw, M, N, K, g));
                  INFO((format == ds::Storage::bf16 ? "bf16" : "fp16")
                       << " M " << M << " N " << N << " K " << K << " split " << split << " bias "
                       << bias << " kernels " << static_cast<int>(e.kernels) << " threads "
                       << e.threads);
                  CHECK(std::memcmp(y32.data(), y16.data(), 4 * y32.size()) == 0);
                }
              }
            }
          }
        }
      }
    }
  }
}

// Packed matrices (ops::pack_weights) against the reference loops on the row-major float32
// widening: few rows of x (decode: six blocks of 8 output features at once for 16-bit weights,
// then four, two, one) and many (four rows of x share each load), every class of N mod 48 and
// mod 32, split-K with odd parts.
TEST_CASE("packed 16-bit and float32 matrices give the bits of the reference loops",
          "[kernels][stored]") {
  ExecGuard guard;
  std::mt19937 rng(31);
  for (ds::Storage format : {ds::Storage::native, ds::Storage::bf16, ds::Storage::f16}) {
    for (int N : {8, 24, 32, 40, 48, 56, 72, 80, 88, 96, 99}) {
      const int K = 37;
      const auto w16 =
          random_halves(static_cast<size_t>(N) * K,
                        format == ds::Storage::native ? ds::Storage::bf16 : format, rng);
      const auto w32 = widened(w16, format == ds::Storage::f16 ? format : ds::Storage::bf16);
      const void* stored = format == ds::Storage::native ? static_cast<const void*>(w32.data())
                                                         : static_cast<const void*>(w16.data());
      std::vector<uint8_t> packed(ds::ops::packed_values(N, K) *
                                  (format == ds::Storage::native ? 4 : 2));
      ds::ops::pack_weights(packed.data(), {stored, format}, N, K);
      for (int M : {1, 2, 3, 5}) {
        std::vector<float> x(static_cast<size_t>(M) * K);
        for (float& v : x) v = std::uniform_real_distribution<float>(-2, 2)(rng);
        for (int split : {1, 3}) {
          const OpNumerics g = gemm_numerics(ds::Storage::native, split);
          ds::ops::set_cpu_kernels(ds::ops::CpuKernels::reference);
          ds::ops::set_cpu_threads(1);
          std::vector<float> want(static_cast<size_t>(M) * N), got(want.size());
          matmul_f32(want.data(), x.data(), K, w32.data(), K, nullptr, M, N, K, g);
          for (const Execution& e : kExecutions) {
            ds::ops::set_cpu_kernels(e.kernels);
            ds::ops::set_cpu_threads(e.threads);
            ds::ops::matmul(stored_gemm(got.data(), x.data(), K, {packed.data(), format, true}, K,
                                        {}, M, N, K, g));
            INFO("format " << static_cast<int>(format) << " M " << M << " N " << N << " split "
                           << split << " kernels " << static_cast<int>(e.kernels) << " threads "
                           << e.threads);
            CHECK(std::memcmp(want.data(), got.data(), 4 * want.size()) == 0);
          }
        }
      }
    }
  }
}

// ops::matmul_group runs several matmuls as one job of the threads: each output must be the bits
// of its own matmul, here the reference loops on the float32 widening, whatever the mix of
// formats, layouts, shapes, biases and split-K in the group and whichever thread takes an item
// (sizes large enough that three threads share the job).
TEST_CASE("a group of matmuls gives each matmul's own bits", "[kernels][stored]") {
  ExecGuard guard;
  std::mt19937 rng(37);
  const int K = 300;
  struct Member {
    ds::Storage format;
    bool packed, bias;
    int N, split;
  };
  const Member members[] = {{ds::Storage::native, false, true, 99, 1},
                            {ds::Storage::bf16, true, true, 200, 3},
                            {ds::Storage::f16, false, true, 21, 2},
                            {ds::Storage::bf16, false, false, 48, 1},
                            {ds::Storage::native, true, false, 57, 4}};
  for (int M : {1, 3, 6}) {
    std::vector<float> x(static_cast<size_t>(M) * K);
    for (float& v : x) v = std::uniform_real_distribution<float>(-2, 2)(rng);
    std::vector<std::vector<uint16_t>> w16, b16;
    std::vector<std::vector<float>> w32, b32, want, got;
    std::vector<std::vector<uint8_t>> stored;
    std::vector<ds::ops::StoredGemm> calls;
    for (const Member& m : members) {
      const ds::Storage bits = m.format == ds::Storage::f16 ? m.format : ds::Storage::bf16;
      w16.push_back(random_halves(static_cast<size_t>(m.N) * K, bits, rng));
      b16.push_back(random_halves(static_cast<size_t>(m.N), bits, rng));
      w32.push_back(widened(w16.back(), bits));
      b32.push_back(widened(b16.back(), bits));
      const bool f32 = m.format == ds::Storage::native;
      const void* values = f32 ? static_cast<const void*>(w32.back().data())
                               : static_cast<const void*>(w16.back().data());
      const size_t elem = f32 ? 4 : 2;
      if (m.packed) {
        stored.emplace_back(ds::ops::packed_values(m.N, K) * elem);
        ds::ops::pack_weights(stored.back().data(), {values, m.format}, m.N, K);
      } else {
        stored.emplace_back(static_cast<const uint8_t*>(values),
                            static_cast<const uint8_t*>(values) + elem * m.N * K);
      }
      const OpNumerics g = gemm_numerics(ds::Storage::native, m.split);
      ds::ops::set_cpu_kernels(ds::ops::CpuKernels::reference);
      want.emplace_back(static_cast<size_t>(M) * m.N);
      matmul_f32(want.back().data(), x.data(), K, w32.back().data(), K,
                 m.bias ? b32.back().data() : nullptr, M, m.N, K, g);
      got.emplace_back(want.back().size());
    }
    for (size_t i = 0; i < std::size(members); ++i) {
      const Member& m = members[i];
      const void* bias = m.format == ds::Storage::native ? static_cast<const void*>(b32[i].data())
                                                         : static_cast<const void*>(b16[i].data());
      calls.push_back(
          stored_gemm(got[i].data(), x.data(), K, {stored[i].data(), m.format, m.packed}, K,
                      m.bias ? ds::ops::StoredWeights{bias, m.format} : ds::ops::StoredWeights{}, M,
                      m.N, K, gemm_numerics(ds::Storage::native, m.split)));
    }
    for (const Execution& e : kExecutions) {
      ds::ops::set_cpu_kernels(e.kernels);
      ds::ops::set_cpu_threads(e.threads);
      for (auto& y : got) std::fill(y.begin(), y.end(), -1.0f);
      ds::ops::matmul_group(calls.data(), calls.size());
      for (size_t i = 0; i < std::size(members); ++i) {
        INFO("M " << M << " member " << i << " kernels " << static_cast<int>(e.kernels)
                  << " threads " << e.threads);
        CHECK(std::memcmp(want[i].data(), got[i].data(), 4 * want[i].size()) == 0);
      }
    }
  }
}

TEST_CASE("embedding and rmsnorm on 16-bit weights as stored equal their float32 widening",
          "[kernels][stored]") {
  std::mt19937 rng(31);
  const int V = 11, D = 37, rows = 4;
  for (ds::Storage format : {ds::Storage::bf16, ds::Storage::f16}) {
    const auto t16 = random_halves(static_cast<size_t>(V) * D, format, rng);
    const auto t32 = widened(t16, format);
    const int32_t ids[rows] = {3, 0, 10, 3};
    std::vector<float> e32(static_cast<size_t>(rows) * D), e16(e32.size());
    ds::ops::embedding(e32.data(), t32.data(), ids, rows, D);
    ds::ops::embedding(e16.data(), {t16.data(), format}, ids, rows, D);
    CHECK(std::memcmp(e32.data(), e16.data(), 4 * e32.size()) == 0);
    // the embedding rows themselves are the widened table rows
    CHECK(std::memcmp(e16.data() + D, t32.data(), 4 * D) == 0);

    std::vector<float> x(static_cast<size_t>(rows) * D);
    for (float& v : x) v = std::uniform_real_distribution<float>(-3, 3)(rng);
    const auto n16 = random_halves(D, format, rng);
    const auto n32 = widened(n16, format);
    for (ds::Storage out : {ds::Storage::native, ds::Storage::f16}) {
      std::vector<float> r32(x.size()), r16(x.size());
      OpNumerics num;
      num.out = out;
      ds::ops::rmsnorm<float>({r32.data(), x.data(), n32.data(), rows, D, 1e-5, num});
      ds::ops::rmsnorm({r16.data(), x.data(), {n16.data(), format}, rows, D, 1e-5, num});
      CHECK(std::memcmp(r32.data(), r16.data(), 4 * r32.size()) == 0);
    }
  }
}
