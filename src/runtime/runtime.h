// The transformer runtime: a forward pass over new tokens with a KV cache, on the CPU reference.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "src/model/model.h"
#include "src/runtime/pass_logits.h"
#include "src/runtime/shadow.h"
#include "src/runtime/taps.h"

namespace ds::trace {
class KernelRecorder;
}

namespace ds {
class NumericsPlan;
}

namespace ds {

// Precision of a run (docs/configurations.md): fp64 (the oracle), fp32, fp16 and bf16
// (weights, activations and KV cache stored in that format, compute in fp32 unless
// accum_f16), layercast (weights stored bf16, upcast per matmul, everything else fp32).
enum class DType { fp64, fp32, fp16, bf16, layercast };
DType parse_dtype(const std::string& s);  // throws ds::Error naming the bad value
const char* dtype_name(DType d);
// Where a precision stores its weights, and its activations and KV cache.
Storage weight_storage(DType d);
Storage activation_storage(DType d);

enum class GemmPolicy { invariant, heuristic };
enum class Device { cpu, cuda };
// GEMM implementation on the CUDA backend (--kernel gemm=...): cuBLASLt, or the own tiled kernel
// that reproduces the CPU reference's reduction order.
enum class GemmKernel { cublas, tiled };
// Attention's reduction order on both backends (--kernel attention=...): the whole row's softmax
// at once (the reference), or FlashAttention-2's online softmax over 64-key tiles
// (kernels/ops.h OpNumerics::tile; on CUDA a tensor-core kernel, fp16 and bf16 only).
enum class AttnKernel { rowwise, tiled };
inline constexpr int kAttentionTile = 64;  // keys per tile of AttnKernel::tiled

// Every knob of the runtime that changes the numbers.
struct Numerics {
  DType dtype = DType::fp32;
  bool accum_f16 = false;  // GEMM / attention accumulation in fp16
  GemmPolicy gemm_policy = GemmPolicy::invariant;
  int split_k = 0;  // 0 = auto: 1 when invariant, from the shape when heuristic
  int tp = 1;       // tensor-parallel degree of row-parallel layers
  ops::AllReduce allreduce = ops::AllReduce::ring;
  int attn_splits = 0;  // 0 = auto: 1 when invariant, from the batch when heuristic
  Device device = Device::cpu;
  // CUDA backend only, except attn_kernel (the CPU reference has one GEMM implementation):
  GemmKernel gemm_kernel = GemmKernel::cublas;
  AttnKernel attn_kernel = AttnKernel::rowwise;  // both backends
  bool tf32 = false;                             // TF32 tensor cores for fp32 GEMMs
};

// One input row of a forward pass: token `token` of the sequence in KV-cache slot `slot`, at
// position `pos`. Rows of one slot are contiguous, in increasing consecutive positions.
struct BatchRow {
  int slot = 0;
  int pos = 0;
  int32_t token = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  // Runs all rows in one pass (a batched prefill and/or decode of several sequences), appends
  // their keys/values to each slot's cache, and returns one logits row per input row (row r
  // predicts the token after rows[r].token), valid until the next pass.
  // Throws ds::Error for an unknown token id, a bad slot, or a position past the capacity.
  virtual PassLogits& forward(std::span<const BatchRow> rows) = 0;
  // The same, every logits row copied into `logits` (rows.size() * vocab values).
  void forward(std::span<const BatchRow> rows, std::vector<double>& logits);
  // Taps every wanted site of later forward passes into `hook` (null: no taps). The hook's
  // wants() is asked here, once per site.
  virtual void set_tap_hook(TapHook* hook) = 0;
  // Attributes every kernel of later forward passes to its tap site (CUDA backend; the CPU
  // reference launches no kernels and ignores it). Null stops recording.
  virtual void set_kernel_recorder(trace::KernelRecorder* /*recorder*/) {}
  // Runs the shadows `source` wants inside every later forward pass (shadow.h; null: none, the
  // default, and nothing extra is allocated or computed). Throws ds::Error on a backend that
  // cannot run them (the CUDA backend, which defers its taps to the end of the pass).
  virtual void set_shadow_source(ShadowSource* source);
  // Every later pass decides each op's numerics by `plan` (numerics_plan.h), whose own side must
  // be this runtime's configuration; passes are counted from the next one. Throws ds::Error for
  // a plan of another dtype or device, or one that mixes configurations or perturbs an op's
  // output (test_perturb) on a backend that cannot (CUDA).
  virtual void set_plan(NumericsPlan plan);
  virtual int capacity() const = 0;  // positions per slot
  virtual int slots() const = 0;     // sequences that can be in flight at once
  virtual const ModelConfig& config() const = 0;

  // One sequence in slot 0: tokens at positions pos, pos+1, ...
  void forward(std::span<const int32_t> tokens, int pos, std::vector<double>& logits);
};

// A CPU reference runtime with `slots` KV caches of `capacity` positions each (capacity at most
// the model's context length). Throws ds::Error when the numerics do not fit the model (tp not
// dividing the heads or the MLP width).
std::unique_ptr<Runtime> make_cpu_runtime(const Model& model, const Numerics& numerics,
                                          int capacity, int slots = 1);
// A CUDA runtime on device 0 with the same contract. Throws ds::Error when this build has no
// CUDA part, when there is no device, or when a knob has no CUDA implementation.
std::unique_ptr<Runtime> make_cuda_runtime(const Model& model, const Numerics& numerics,
                                           int capacity, int slots = 1);
// The runtime of numerics.device.
std::unique_ptr<Runtime> make_runtime(const Model& model, const Numerics& numerics, int capacity,
                                      int slots = 1);
// The same with default knobs for a precision.
std::unique_ptr<Runtime> make_cpu_runtime(const Model& model, DType dtype, int capacity,
                                          int slots = 1);

}  // namespace ds
