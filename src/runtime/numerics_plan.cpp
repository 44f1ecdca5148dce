// The per-op numerics plan (numerics_plan.h): each op's decisions from its side's configuration,
// by the rules of policy.h, at its side's pass shape.
#include "src/runtime/numerics_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace ds {
namespace {

constexpr std::array<std::string_view, 17> kOpNames = {
    "attn_norm", "q_proj",   "k_proj",    "v_proj",     "rope",    "attention",
    "o_proj",    "attn_add", "mlp_norm",  "gate_proj",  "up_proj", "swiglu",
    "down_proj", "mlp_add",  "embedding", "final_norm", "lm_head"};

}  // namespace

const char* plan_op_name(PlanOp op) {
  return kOpNames[static_cast<size_t>(op)].data();
}

std::string op_id_name(OpId id) {
  const std::string_view name = kOpNames[static_cast<size_t>(id.op)];
  return id.layer < 0 ? std::string(name) : fmt::format("L{}/{}", id.layer, name);
}

std::optional<OpId> parse_op_id(std::string_view name, int n_layers) {
  for (size_t k = kLayerPlanOps; k < kOpNames.size(); ++k) {
    if (name == kOpNames[k]) return OpId{-1, static_cast<PlanOp>(k)};
  }
  const size_t slash = name.find('/');
  if (name.size() < 4 || name[0] != 'L' || slash == std::string_view::npos) return std::nullopt;
  int layer = -1;
  const auto [end, ec] = std::from_chars(name.data() + 1, name.data() + slash, layer);
  if (ec != std::errc() || end != name.data() + slash || layer < 0 || layer >= n_layers) {
    return std::nullopt;
  }
  const std::string_view op = name.substr(slash + 1);
  for (size_t k = 0; k < kLayerPlanOps; ++k) {
    if (op == kOpNames[k]) return OpId{layer, static_cast<PlanOp>(k)};
  }
  return std::nullopt;
}

std::vector<OpId> all_op_ids(int n_layers) {
  std::vector<OpId> ids{{-1, PlanOp::embedding}};
  for (int l = 0; l < n_layers; ++l) {
    for (int k = 0; k < kLayerPlanOps; ++k) ids.push_back({l, static_cast<PlanOp>(k)});
  }
  ids.push_back({-1, PlanOp::final_norm});
  ids.push_back({-1, PlanOp::lm_head});
  return ids;
}

bool is_gemm(PlanOp op) {
  switch (op) {
    case PlanOp::q_proj:
    case PlanOp::k_proj:
    case PlanOp::v_proj:
    case PlanOp::o_proj:
    case PlanOp::gate_proj:
    case PlanOp::up_proj:
    case PlanOp::down_proj:
    case PlanOp::lm_head:
      return true;
    default:
      return false;
  }
}

bool is_row_parallel(PlanOp op) {
  return op == PlanOp::o_proj || op == PlanOp::down_proj;
}

NumericsPlan::NumericsPlan(const Numerics& nx) : a_{nx, {}, {}} {}

NumericsPlan::NumericsPlan(PlanSide a) : a_(std::move(a)) {}

NumericsPlan::NumericsPlan(PlanSide a, PlanSide b, std::vector<OpId> b_ops)
    : a_(std::move(a)), b_(std::move(b)), b_ops_(std::move(b_ops)) {
  std::sort(b_ops_.begin(), b_ops_.end());
  b_ops_.erase(std::unique(b_ops_.begin(), b_ops_.end()), b_ops_.end());
}

void NumericsPlan::begin_pass(PassShape own) {
  ++pass_;
  own_ = own;
}

const PlanSide& NumericsPlan::side(OpId id) const {
  return std::binary_search(b_ops_.begin(), b_ops_.end(), id) ? b_ : a_;
}

PassShape NumericsPlan::shape(const PlanSide& s) const {
  if (pass_ >= 0 && static_cast<size_t>(pass_) < s.shapes.size()) return s.shapes[pass_];
  return own_;
}

ops::OpNumerics NumericsPlan::stored(OpId id) const {
  ops::OpNumerics n;
  n.out = activation_storage(side(id).nx.dtype);
  return n;
}

int NumericsPlan::draw(OpId id, int salt, int n) const {
  uint64_t x = seed_ ^ (static_cast<uint64_t>(pass_ + 1) * 0x9e3779b97f4a7c15ull) ^
               (static_cast<uint64_t>(id.layer + 2) << 40) ^ (static_cast<uint64_t>(id.op) << 32) ^
               static_cast<uint64_t>(salt);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;  // splitmix64's finaliser
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<int>(x % static_cast<uint64_t>(std::max(1, n)));
}

ops::OpNumerics NumericsPlan::gemm(OpId id, int N, int K) const {
  const PlanSide& s = side(id);
  ops::OpNumerics n = stored(id);
  n.accum_f16 = s.nx.accum_f16;
  n.split = gemm_split_k(s.nx, shape(s).rows, N, K);
  if (reorder_) n.split = 1 + draw(id, N, std::clamp(K / 16, 1, 4));
  return n;
}

ops::OpNumerics NumericsPlan::attention(int layer, const SeqRows& rows, int n_heads) const {
  const OpId id{layer, PlanOp::attention};
  const PlanSide& s = side(id);
  ops::OpNumerics n = stored(id);
  n.accum_f16 = s.nx.accum_f16;
  n.split = attention_splits(s.nx, rows.rows, rows.max_keys, shape(s).seqs, n_heads);
  n.tile = s.nx.attn_kernel == AttnKernel::tiled ? kAttentionTile : 0;
  n.p_round = n.out;
  if (reorder_ && n.tile == 0) n.split = 1 + draw(id, rows.max_keys, 4);
  return n;
}

Nudge NumericsPlan::perturbation(OpId id) const {
  const PlanSide& s = side(id);
  return s.perturb.op == id ? s.perturb.how : Nudge::none;
}

bool NumericsPlan::perturbs() const {
  const auto perturbed = [this](const PlanSide& s) {
    return s.perturb.active() && &side(s.perturb.op) == &s;
  };
  return perturbed(a_) || perturbed(b_);
}

RowParallel NumericsPlan::row_parallel(OpId id) const {
  const PlanSide& s = side(id);
  RowParallel rp{s.nx.tp, s.nx.allreduce};
  if (reorder_ && rp.tp > 2)
    rp.order = draw(id, 7, 2) == 0 ? ops::AllReduce::ring : ops::AllReduce::tree;
  return rp;
}

namespace {

// A GEMM op's (N, K) in a model of config c, before tensor-parallel sharding.
std::pair<int, int> gemm_shape(PlanOp op, const ModelConfig& c) {
  switch (op) {
    case PlanOp::q_proj:
      return {c.q_dim(), c.dim};
    case PlanOp::k_proj:
    case PlanOp::v_proj:
      return {c.kv_dim(), c.dim};
    case PlanOp::o_proj:
      return {c.dim, c.q_dim()};
    case PlanOp::gate_proj:
    case PlanOp::up_proj:
      return {c.hidden_dim, c.dim};
    case PlanOp::down_proj:
      return {c.dim, c.hidden_dim};
    default:  // lm_head
      return {c.vocab_size, c.dim};
  }
}

const char* storage_name(Storage s) {
  return s == Storage::bf16 ? "bf16" : s == Storage::f16 ? "fp16" : "fp32";  // native: the float
}

const char* nudge_name(Nudge n) {
  switch (n) {
    case Nudge::bf16:
      return "bf16";
    case Nudge::f16:
      return "f16";
    case Nudge::ulp_up:
      return "+ulp";
    case Nudge::ulp_down:
      return "-ulp";
    default:
      return "none";
  }
}

}  // namespace

OpDecision op_decision(const NumericsPlan& plan, OpId id, const ModelConfig& c,
                       const SeqRows& rows) {
  OpDecision d;
  d.perturb = plan.perturbation(id);
  if (id.op == PlanOp::attention) {
    d.num = plan.attention(id.layer, rows, c.n_heads);
  } else if (is_gemm(id.op)) {
    auto [N, K] = gemm_shape(id.op, c);
    if (is_row_parallel(id.op)) {
      d.rp = plan.row_parallel(id);
      K /= std::max(1, d.rp.tp);  // each rank's shard (forward.h row_parallel_gemm)
    }
    d.num = plan.gemm(id, N, K);
  } else {
    d.num = plan.stored(id);
  }
  return d;
}

std::vector<std::string> decision_changes(OpId id, const OpDecision& a, const OpDecision& b) {
  std::vector<std::string> out;
  const bool attention = id.op == PlanOp::attention;
  if (a.num.out != b.num.out) {
    out.push_back(fmt::format("out {}→{}", storage_name(a.num.out), storage_name(b.num.out)));
  }
  if (a.num.accum_f16 != b.num.accum_f16) {
    out.push_back(fmt::format("accum {}→{}", a.num.accum_f16 ? "fp16" : "fp32",
                              b.num.accum_f16 ? "fp16" : "fp32"));
  }
  if (a.num.split != b.num.split) {
    out.push_back(
        fmt::format("{} {}→{}", attention ? "split-KV" : "split-K", a.num.split, b.num.split));
  }
  if (a.num.tile != b.num.tile) out.push_back(fmt::format("tile {}→{}", a.num.tile, b.num.tile));
  if (a.num.p_round != b.num.p_round && a.num.out == b.num.out) {
    out.push_back(fmt::format("p {}→{}", storage_name(a.num.p_round), storage_name(b.num.p_round)));
  }
  if (a.rp.tp != b.rp.tp) out.push_back(fmt::format("tp {}→{}", a.rp.tp, b.rp.tp));
  if (a.rp.order != b.rp.order && a.rp.tp > 1 && b.rp.tp > 1) {
    const auto name = [](ops::AllReduce o) { return o == ops::AllReduce::tree ? "tree" : "ring"; };
    out.push_back(fmt::format("all-reduce {}→{}", name(a.rp.order), name(b.rp.order)));
  }
  if (a.perturb != b.perturb) {
    out.push_back(fmt::format("perturbed {}→{}", nudge_name(a.perturb), nudge_name(b.perturb)));
  }
  return out;
}

}  // namespace ds
