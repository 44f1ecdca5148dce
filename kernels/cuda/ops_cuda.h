// The CUDA ops: host-callable launchers of kernels/cuda/*.cu, plain C++ (no CUDA headers), so the
// runtime in src/ can call them without seeing device code. Each op computes what the op of the
// same name in kernels/ops.h computes (same shapes, same rounding points); where the reduction
// order differs from the CPU reference, the launcher's comment says so. Pointers are device
// pointers unless named host_*; every call is asynchronous on `stream` (a cudaStream_t, null =
// the default stream) and throws ds::Error on a launch failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/float_formats.h"
#include "kernels/ops.h"

namespace ds::cuda {

using Stream = void*;  // cudaStream_t

// Storage of a device buffer: ds::Storage (common/float_formats.h), native = f32 on the GPU.
using ds::Storage;
size_t storage_bytes(Storage t);
const char* storage_name(Storage t);

// A device pointer with the storage type of what it points at: how the CUDA ops' call
// descriptions (kernels/ops.h ops::Gemm, ops::Attention, ops::Rmsnorm, ops::Rope) point at
// activations and weights.
struct DevicePtr {
  void* p = nullptr;
  Storage t = Storage::native;
  // n elements further
  DevicePtr operator+(size_t n) const {
    return {static_cast<unsigned char*>(p) + n * storage_bytes(t), t};
  }
};

// out[r] = table[ids[r]] converted to out_t.                   out: (n, dim), table: (vocab, dim)
void embedding(void* out, Storage out_t, const void* table, Storage table_t, const int32_t* ids,
               int n, int dim, Stream stream);

// ops::Rmsnorm on the device: y = round((x * inv_rms) * w) stored as y.t, the sum of squares in
// fp32 by a tree reduction (not the CPU's sequential order). x and y have one storage type.
using RmsnormArgs = ops::Rmsnorm<DevicePtr, DevicePtr>;
void rmsnorm(const RmsnormArgs& r, Stream stream);

// ops::Rope on the device: half-split rotary embedding in place, stored as x.t; positions on the
// device; cos, sin: fp32 (max_pos, head_dim/2).
using RopeArgs = ops::Rope<DevicePtr, const float*>;
void rope(const RopeArgs& r, Stream stream);

// ops::Attention on the device: causal GQA attention of `rows` query rows, each against its own
// sequence's cache: row r reads k_cache + row_slot[r] * slot_stride (elements) and attends keys
// max(0, p - window + 1) .. p, p = positions[r] (positions, row_slot, row_splits: device memory).
// out, q and the caches share one storage type (out.t). Dot products over head_dim run in order
// (as the CPU); the softmax sums are tree reductions. num.split = 1: normalised probabilities
// rounded to t, then sum p_t v_t in key order. num.split > 1 (flash-decoding): the CPU's chunks
// (sizes differ by at most one, larger first), per-chunk max / sum / unnormalised output, merged
// in chunk order (the merge always in fp32, as the CPU). row_splits (optional): each row's own
// split count (the split of its sequence), num.split then being their largest; a row whose entry
// is 0 is left alone (another kernel writes it). max_keys: the scores scratch's stride (at least
// the largest position + 1). num.accum_f16: dot products and P.V sums round every partial sum to
// fp16.
// Tiled (AttentionTiles): FlashAttention-2's order of kernels/ops.h (num.tile = 64) on tensor
// cores (mma.sync m16n8k16, fp32 accumulation), fp16 and bf16, head_dim 16, 32, 64 or 128, no
// fp16 accumulation: one block per (tile of up to 64 rows of one sequence, head).
using AttentionArgs = ops::Attention<DevicePtr>;
// fp32 scratch the call needs.
size_t attention_scratch_floats(const AttentionArgs& a);
void attention(const AttentionArgs& a, float* scratch, Stream stream);

// The query-row tiles of a tiled attention call: tile i is rows [row0, row_end) of one sequence
// (at most 64 rows, consecutive positions).
struct AttentionTile {
  int row0, row_end;
};
// Whether attention_tiled runs this storage type and head size.
bool attention_tiled_supports(Storage t, int head_dim);
// Tiled attention of the rows the n_tiles tiles (device memory) cover; a.rows, a.splits,
// a.row_splits and a.max_keys are not read.
void attention_tiled(const AttentionArgs& a, const AttentionTile* tiles, int n_tiles,
                     Stream stream);

// Appends each row's key and value to its sequence's cache: row r goes to position positions[r]
// of slot row_slot[r] (caches: slot_stride values per slot, kv_dim per position; k, v: (rows,
// kv_dim)), copied exactly.
void kv_append(void* k_cache, void* v_cache, const void* k, const void* v, Storage t, int rows,
               const int* row_slot, const int* positions, size_t slot_stride, int kv_dim,
               Stream stream);

// out = round_t(silu(gate) * up)
void swiglu(void* out, const void* gate, const void* up, Storage t, size_t n, Stream stream);
// y = round_t(a + b) (y may alias a)
void add(void* y, const void* a, const void* b, Storage t, size_t n, Stream stream);
// y[m][n] = round_t(y[m][n] + bias[n])                 y: (M, N) of t; bias: (N) of bias_t
void add_bias(void* y, Storage t, const void* bias, Storage bias_t, int M, int N, Stream stream);
// dst = src converted (round to nearest even when narrowing).
void cast(void* dst, Storage dst_t, const void* src, Storage src_t, size_t n, Stream stream);

// The tensor-parallel all-reduce of kernels/ops.h all_reduce on the device: parts holds tp blocks
// of n values of t; y = their sum in ring or tree order, each addition rounded to t. parts is
// clobbered; y must not overlap parts.
void all_reduce(void* y, void* parts, Storage t, int tp, size_t n, ops::AllReduce order,
                Stream stream);

// LayerCast's upcast: the rows x cols block of a weight whose rows are ld apart (a tensor-parallel
// shard ends before its row does), converted from w_t to dst_t into dst with the same row
// stride; dst holds (rows - 1) * ld + cols values.
void upcast_rows(void* dst, Storage dst_t, const void* w, Storage w_t, int rows, int cols, int ld,
                 Stream stream);

// Per logits row the greedy token, as ds::greedy_argmax: the largest logit, among equals the
// lowest id into lowest[r] and the highest into highest[r] (a NaN is never chosen; a row of NaN
// only gives 0). logits: (rows, vocab) of t; lowest, highest: (rows).
void logits_argmax(int32_t* lowest, int32_t* highest, const void* logits, Storage t, int rows,
                   int vocab, Stream stream);

// Per logits row what a trace stores (trace/topk.h): the k largest logits (k <= vocab and
// <= kLogitsTopkMax) by value descending, ties by lower id (-0 equals +0; NaN sorts last), their
// ids, and the log-sum-exp max + log(sum exp(x - max)) summed in double, rounded to float.
// ids, values: (rows, k); lse: (rows).
inline constexpr int kLogitsTopkMax = 1024;
void logits_topk(int32_t* ids, float* values, float* lse, const void* logits, Storage t, int rows,
                 int vocab, int k, Stream stream);

// ops::Gemm on the device: y = x w^T (+ bias), the GEMM of kernels/ops.h matmul. x: (M, K) rows
// ldx apart; w: (N, K) rows ldw apart from column w_col (the weight layout of Hugging Face); y:
// (M, N) dense; bias: (N) or null. y and x share one storage type; w and bias share another.
// num.split: K chunks (the CPU's chunking), the partials added in chunk order; num.accum_f16:
// every partial sum rounded to fp16; the result stored as y.t.
using GemmArgs = ops::Gemm<DevicePtr, DevicePtr>;

// The own tiled GEMM: each output's dot product runs over k in order within its chunk, with
// separate multiply and add roundings, exactly the CPU reference's order, so for the same split
// it reproduces ops::matmul bit for bit. Any mix of storage types (layercast: x f32, w bf16).
// workspace: gemm_tiled_workspace_floats() fp32 values (0 when split_k = 1).
size_t gemm_tiled_workspace_floats(const GemmArgs& g);
void gemm_tiled(const GemmArgs& g, float* workspace, Stream stream);

// GEMMs through cuBLASLt: fp32 (TF32 tensor cores only when tf32 is on), fp16 and bf16 with fp32
// accumulation, fp16 with fp16 accumulation (num.accum_f16). num.split = 0 lets cuBLASLt's
// heuristic choose; N >= 1 sets the chosen algorithm's split-K count. A weight (and bias) of
// another type than x (LayerCast: bf16 weights, f32 activations) is upcast with upcast_rows into
// the plan's own buffer right before the GEMM. The bias is added by add_bias after the GEMM.
class CublasGemm {
 public:
  CublasGemm();
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;
  void run(const GemmArgs& g, bool tf32, Stream stream);
  // cuBLASLt's version, for traces.
  static std::string version();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds::cuda
