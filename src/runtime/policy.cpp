// Knob-driven decisions shared by the CPU and CUDA runtimes (src/runtime/policy.h).
#include "src/runtime/policy.h"

#include <fmt/format.h>

#include "common/error.h"

namespace ds {

int gemm_split_k(const Numerics& nx, int M, int N, int K) {
  if (nx.split_k > 0) return nx.split_k;
  return nx.gemm_policy == GemmPolicy::heuristic ? ops::heuristic_split_k(M, N, K) : 1;
}

int attention_splits(const Numerics& nx, int rows, int kv_len, int n_seqs, int n_heads) {
  if (nx.attn_splits > 0) return nx.attn_splits;
  if (nx.gemm_policy == GemmPolicy::invariant || rows > 1) return 1;  // prefill: no split-KV
  return ops::heuristic_attn_splits(kv_len, n_seqs, n_heads);
}

void check_runtime_setup(const ModelConfig& c, const Numerics& nx, int capacity, int slots) {
  if (capacity <= 0 || capacity > c.max_seq_len) {
    throw Error(fmt::format("KV cache capacity {} outside 1..{} (the model's context length)",
                            capacity, c.max_seq_len));
  }
  if (slots <= 0) throw Error(fmt::format("{} sequence slots requested, need >= 1", slots));
  if (nx.tp < 1 || c.n_heads % nx.tp != 0 || c.n_kv_heads % nx.tp != 0 ||
      c.hidden_dim % nx.tp != 0) {
    throw Error(fmt::format("tp {} does not divide the model's {} heads, {} key/value heads and "
                            "MLP width {}",
                            nx.tp, c.n_heads, c.n_kv_heads, c.hidden_dim),
                "choose a tensor-parallel degree that divides all three");
  }
}

int count_sequences(std::span<const BatchRow> rows) {
  int seqs = rows.empty() ? 0 : 1;
  for (size_t r = 1; r < rows.size(); ++r) seqs += rows[r].slot != rows[r - 1].slot;
  return seqs;
}

void check_batch_rows(std::span<const BatchRow> rows, int vocab_size, int slots, int capacity) {
  for (size_t r = 0; r < rows.size(); ++r) {
    const BatchRow& b = rows[r];
    check_token_ids(std::span<const int32_t>(&b.token, 1), vocab_size);
    if (b.slot < 0 || b.slot >= slots) {
      throw Error(fmt::format("sequence slot {} outside 0..{}", b.slot, slots - 1));
    }
    if (b.pos < 0 || b.pos >= capacity) {
      throw Error(fmt::format("position {} exceeds the context of {} positions", b.pos, capacity),
                  "use a shorter prompt or fewer new tokens");
    }
    if (r > 0 && rows[r - 1].slot == b.slot && rows[r - 1].pos + 1 != b.pos) {
      throw Error("rows of one sequence must have consecutive positions");
    }
  }
}

}  // namespace ds

namespace ds {

void BatchColumns::assign(std::span<const BatchRow> rows, int vocab_size, int slots, int capacity) {
  check_batch_rows(rows, vocab_size, slots, capacity);
  n_seqs = count_sequences(rows);
  tokens.resize(rows.size());
  slot.resize(rows.size());
  pos.resize(rows.size());
  seqs.clear();
  for (size_t r = 0; r < rows.size(); ++r) {
    tokens[r] = rows[r].token;
    slot[r] = rows[r].slot;
    pos[r] = rows[r].pos;
    if (r == 0 || rows[r].slot != rows[r - 1].slot) seqs.push_back({static_cast<int>(r), 0, 0, 1});
    seqs.back().rows += 1;
    seqs.back().max_keys = rows[r].pos + 1;
  }
}

}  // namespace ds
