// The per-op numerics plan: for every op call of a forward pass, what the configuration decides
// at it (kernels/ops.h OpNumerics: the output's storage, the accumulator, split-K or split-KV,
// the attention tile; for the row-parallel GEMMs also the tensor-parallel degree and all-reduce
// order). The forward pass reads it instead of deriving choices inside each op, so a plan can take
// one configuration's numerics at some ops and another's at the rest (explain), or another valid
// reduction order at every op (calibrate). A plan made from one configuration decides exactly what
// the forward pass always decided (the refactor hashes hold).
//
// Batch and chunked prefill change numerics only through a plan's decisions: a GEMM's M picks its
// split-K under the heuristic policy, the number of sequences in a pass picks split-KV. A side of a
// plan may carry the pass shapes of its original run (PlanSide::shapes), so that a replay of one
// sequence decides at each of its passes as the batched run did.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/ops.h"
#include "src/runtime/policy.h"
#include "src/runtime/runtime.h"

namespace ds {

// The ops of a layer in forward order, then the model's own (layer -1).
enum class PlanOp : uint8_t {
  attn_norm,
  q_proj,
  k_proj,
  v_proj,
  rope,
  attention,
  o_proj,
  attn_add,  // the residual add after attention
  mlp_norm,
  gate_proj,
  up_proj,
  swiglu,
  down_proj,
  mlp_add,  // the residual add after the MLP
  embedding,
  final_norm,
  lm_head,
};
inline constexpr int kLayerPlanOps = 14;  // attn_norm .. mlp_add

// One op call of a forward pass: (layer, op); layer -1 for embedding, final_norm and lm_head.
struct OpId {
  int layer = -1;
  PlanOp op = PlanOp::embedding;
  bool operator==(const OpId&) const = default;
  auto operator<=>(const OpId&) const = default;
};
// "q_proj", "lm_head": an op's name, also its kernel-record label.
const char* plan_op_name(PlanOp op);
// "L3/q_proj", "lm_head"; parse_op_id refuses an unknown name or a layer past n_layers.
std::string op_id_name(OpId id);
std::optional<OpId> parse_op_id(std::string_view name, int n_layers);
// Every op of an n_layers model in forward order.
std::vector<OpId> all_op_ids(int n_layers);
// Whether an op is a GEMM (its entry's split is split-K); a row-parallel one (o_proj, down_proj).
bool is_gemm(PlanOp op);
bool is_row_parallel(PlanOp op);

// The shape of one pass as the decisions read it: its rows (every GEMM's M) and sequences.
struct PassShape {
  int rows = 0, seqs = 0;
  bool operator==(const PassShape&) const = default;
};

// A test-only perturbation of one op's output, applied right after the op, before anything reads
// or taps it: every value rounded to bf16 or f16, or rounded to bf16 and then moved one bf16 ulp
// up (towards +Inf) or down. It plants a cause at one known (layer, op), which explain must find
// both as a knob (the run-config field test_perturb) and as that op (a plan's side carries it, so
// op-level mixing takes it or leaves it like any other decision of the op).
enum class Nudge : uint8_t { none, bf16, f16, ulp_up, ulp_down };
struct OpPerturb {
  OpId op;
  Nudge how = Nudge::none;
  bool active() const { return how != Nudge::none; }
};

// One side of a plan: a configuration's knobs, the pass shapes of its original run by pass index
// of the replay (empty: each pass decides from its own shape), and its test perturbation.
struct PlanSide {
  Numerics nx;
  std::vector<PassShape> shapes;
  OpPerturb perturb;
};

// The row-parallel GEMMs' reduction (forward.h row_parallel_gemm).
struct RowParallel {
  int tp = 1;
  ops::AllReduce order = ops::AllReduce::ring;
};

class NumericsPlan {
 public:
  // Every op decided by one configuration (and its perturbation, when the side has one).
  explicit NumericsPlan(const Numerics& nx);
  explicit NumericsPlan(PlanSide a);
  // Ops in `b_ops` decided by side b, the others by side a.
  NumericsPlan(PlanSide a, PlanSide b, std::vector<OpId> b_ops);

  // The forward pass starts its next pass (index 0, 1, ...), of `own` shape.
  void begin_pass(PassShape own);
  int pass() const { return pass_; }

  // A GEMM of (M = the pass's rows, N, K) at op `id`.
  ops::OpNumerics gemm(OpId id, int N, int K) const;
  // Attention at layer `layer` for sequence `s` of the pass, of a model with n_heads heads.
  ops::OpNumerics attention(int layer, const SeqRows& s, int n_heads) const;
  // An op that only rounds its output (norms, rope, SwiGLU, residual adds, the all-reduce).
  ops::OpNumerics stored(OpId id) const;
  RowParallel row_parallel(OpId id) const;
  // The test perturbation of op `id`'s output: its side's, when that side perturbs this op.
  Nudge perturbation(OpId id) const;

  // Calibration's benign perturbation: from now on every op takes another reduction order a
  // correct kernel may legally use, drawn from `seed`, the pass and the op: a GEMM's split-K
  // from 1 to 4 (at least 16 values of K per part), a row-wise attention's split-KV from 1 to
  // 4, a tensor-parallel all-reduce's ring or tree. Storage formats, accumulators and tiles are
  // left alone.
  void reorder(uint64_t seed) {
    reorder_ = true;
    seed_ = seed;
  }

  // The configuration of side a (the runtime's own) and whether any op takes side b.
  const Numerics& numerics() const { return a_.nx; }
  bool mixed() const { return !b_ops_.empty() || reorder_; }
  // Whether any op's output is perturbed (test-only; the CPU emulation alone can).
  bool perturbs() const;

 private:
  const PlanSide& side(OpId id) const;
  PassShape shape(const PlanSide& s) const;

  // a draw in [0, n) for op `id` in this pass (reorder)
  int draw(OpId id, int salt, int n) const;

  PlanSide a_, b_;
  std::vector<OpId> b_ops_;  // sorted
  bool reorder_ = false;
  uint64_t seed_ = 0;
  int pass_ = -1;
  PassShape own_;
};

// Everything a plan decides at one op in its current pass (the forward pass's calls of it for a
// model of config `c`, one sequence of `rows`), so that two plans can be compared op by op.
struct OpDecision {
  ops::OpNumerics num;
  RowParallel rp;  // row-parallel GEMMs only
  Nudge perturb = Nudge::none;
};
OpDecision op_decision(const NumericsPlan& plan, OpId id, const ModelConfig& c,
                       const SeqRows& rows);
// What differs between two decisions at op `id`, e.g. "split-K 4→2", "out fp32→bf16", "tp 1→4";
// empty when nothing does.
std::vector<std::string> decision_changes(OpId id, const OpDecision& a, const OpDecision& b);

}  // namespace ds
