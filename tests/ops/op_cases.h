// The op table (ggml's tests/test-backend-ops.cpp habit): every op case in one registry, each
// with its shape, its inputs, the CPU op (kernels/ops.h), an optional independent float64
// reference, and the bound a CUDA op must meet against the CPU op, with its reason. It drives
// tests/kernels/test_op_table.cpp, tests/cuda/test_cuda_ops.cpp and bench/ops.cpp; adding an op
// case is one entry in op_cases.cpp (and, for a new kind of op, its CUDA call in
// op_cases_cuda.cpp). This header and op_cases.cpp are plain C++: no CUDA anywhere.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "common/float_formats.h"
#include "kernels/ops.h"

namespace ds::test {

// What a case's op reads: float arrays (already rounded to their storage type, so every side
// sees the same values) and int arrays (ids, positions, slots), in the order its params name.
struct OpData {
  std::vector<std::vector<float>> f;
  std::vector<std::vector<int32_t>> i;
};

// The parameters of each kind of op; `In`/`Ints` name the positions of its arrays in OpData.
enum class GemmEngine { tiled, cublas, cublas_tf32 };
struct GemmParams {
  int M, N, K;
  Storage x_t, w_t;  // y is stored as x_t
  int split;         // split-K; 0 (cuBLASLt only): the library's choice, the CPU uses 1
  bool accum_f16, bias;
  GemmEngine engine;
  uint32_t seed;
  enum In { x, w, b };
};
enum class Elementwise { add, swiglu, cast };
struct ElementwiseParams {
  Elementwise kind;
  Storage t;  // cast: f32 -> t
  size_t n;
  uint32_t seed;
  enum In { a, b };  // add: a + b; swiglu: silu(a) * b; cast: a
};
struct EmbeddingParams {
  Storage t;
  int vocab, dim;
  uint32_t seed;
  enum In { table };
  enum Ints { ids };
};
struct AllReduceParams {
  Storage t;
  int tp;
  size_t n;
  ops::AllReduce order;
  uint32_t seed;
  enum In { parts };
};
struct UpcastParams {  // a bf16 weight shard (rows end before ld) widened to f32
  int rows, cols, ld;
  uint32_t seed;
  enum In { w };
};
struct RmsnormParams {
  Storage t;
  int rows, dim;
  uint32_t seed;
  enum In { x, w };
};
struct RopeParams {
  Storage t;
  int rows, heads, head_dim, max_pos;
  uint32_t seed;
  enum In { x, cos, sin };
  enum Ints { pos };
};
struct AttentionParams {
  Storage t;
  int rows, last_pos, n_heads, n_kv, head_dim, window, splits;
  bool accum_f16;
  int capacity, slots;  // the queries read slot 1 of a cache of `slots` sequences
  uint32_t seed;
  bool tiled = false;  // FlashAttention-2's order (kernels/ops.h OpNumerics::tile)
  enum In { q, k, v };
  enum Ints { pos, slot };
};
struct KvAppendParams {  // rows' keys and values into their slots' caches at their positions
  Storage t;
  int rows, kv_dim, capacity, slots;
  uint32_t seed;
  enum In { k, v };
  enum Ints { pos, slot };
};
enum class LogitsOp { argmax, topk };
struct LogitsParams {  // per row: the greedy token (both tie rules), or the trace's top-k and lse
  Storage t;
  int rows, vocab;
  LogitsOp op;
  int k;  // topk only
  uint32_t seed;
  enum In { x };
};
using OpParams =
    std::variant<GemmParams, ElementwiseParams, EmbeddingParams, AllReduceParams, UpcastParams,
                 RmsnormParams, RopeParams, AttentionParams, KvAppendParams, LogitsParams>;

// One prepared call of an op on one side: inputs copied in, output allocated. run() may be
// called any number of times and computes the same output each time (an op that works in place
// restores its input first); result() returns the output as floats.
struct OpCall {
  std::function<void()> run;
  std::function<std::vector<float>()> result;
};

// Thrown by a CUDA call's run() for a case the device refuses by design (a cuBLASLt split-K no
// algorithm offers for the shape): not a wrong result, and the case is skipped.
struct OpDeclined : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How a result is held against another: normalized MSE (ggml's), or the largest per-element
// relative error (argmax ids must then match exactly: they are integers below 2^24).
enum class Metric { nmse, max_rel };

struct OpCase {
  std::string op, shape;  // "gemm_tiled", "M=7 N=63 K=15 x=f16 ..."
  OpParams params;
  std::function<OpData()> make_inputs;
  std::function<OpCall(const OpData&)> cpu;  // the CPU op of kernels/ops.h
  // Independent float64 reference (plain loops sharing no code with kernels/), or empty; the
  // CPU op must be within ref_bound (normalized MSE) of it.
  std::function<std::vector<double>(const OpData&)> reference;
  double ref_bound = 0;
  const char* ref_bound_reason = "";
  // The CUDA op against the CPU op.
  Metric metric = Metric::nmse;
  double bound = 0;
  const char* bound_reason = "";
  // Work of one call, for the benchmark's GB/s (bytes read and written) and GFLOP/s.
  double bytes = 0, flops = 0;
  // The CUDA op; set only by op_cases_cuda.cpp (tests/ops/op_cases_cuda.h) in CUDA builds.
  std::function<OpCall(const OpData&)> cuda;

  std::string name() const { return op + " " + shape; }
};

// Every case, CPU side only (the CUDA side empty), in a fixed order.
const std::vector<OpCase>& op_cases();

// The numerics of a case's op call, the same on both sides (the CUDA calls: op_cases_cuda.cpp).
// An op that only rounds its output to t:
inline ops::OpNumerics stored_numerics(Storage t) {
  ops::OpNumerics n;
  n.out = t;
  return n;
}
// A gemm case: its output storage, accumulator and split-K (0, cuBLASLt's own choice, is 1 on
// the CPU).
inline ops::OpNumerics gemm_numerics(const GemmParams& p) {
  ops::OpNumerics n = stored_numerics(p.x_t);
  n.accum_f16 = p.accum_f16;
  n.split = p.split > 1 ? p.split : 1;
  return n;
}
// An attention case's call on either side's pointers (the CUDA call adds its slots).
template <typename A>
ops::Attention<A> attention_call(const AttentionParams& p, A out, ops::In<A> q, ops::In<A> k,
                                 ops::In<A> v, const int* positions) {
  ops::Attention<A> a{out, q, k, v};
  a.rows = p.rows;
  a.positions = positions;
  a.n_heads = p.n_heads;
  a.n_kv_heads = p.n_kv;
  a.head_dim = p.head_dim;
  a.window = p.window;
  a.scale = 1.f / std::sqrt(static_cast<float>(p.head_dim));
  a.max_keys = p.last_pos + 1;
  a.num = stored_numerics(p.t);
  a.num.p_round = p.t;
  a.num.accum_f16 = p.accum_f16;
  a.num.split = p.splits;
  a.num.tile = p.tiled ? 64 : 0;
  return a;
}

}  // namespace ds::test
