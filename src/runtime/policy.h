// What both backends decide the same way from the knobs and a batch: the split-K of a GEMM, the
// split-KV of an attention call, the sequences in a batch, and which rows are valid input.
#pragma once

#include <span>
#include <vector>

#include "src/runtime/runtime.h"

namespace ds {

// Split-K of an (M, N, K) GEMM: the explicit split_k, else 1 (invariant) or the heuristic's.
int gemm_split_k(const Numerics& nx, int M, int N, int K);

// Split-KV count of one sequence's attention call of `rows` query rows over kv_len keys in a
// batch of n_seqs sequences: the explicit attn_splits, else 1 (invariant policy or prefill) or
// the flash-decoding heuristic's.
int attention_splits(const Numerics& nx, int rows, int kv_len, int n_seqs, int n_heads);

// Throws ds::Error for a capacity outside the model's context, no slots, or a tp that does not
// divide the heads, key/value heads and MLP width.
void check_runtime_setup(const ModelConfig& c, const Numerics& nx, int capacity, int slots);

// One sequence's rows in a pass: rows [r0, r0 + rows), all of one slot, in position order.
struct SeqRows {
  int r0 = 0, rows = 0;
  int max_keys = 0;  // keys its last row attends to at most (its position + 1)
  int splits = 1;    // its attention's split-KV count (attention_splits; set by the forward pass)
};

// The rows of one forward pass as the columns the ops take, checked (check_batch_rows).
struct BatchColumns {
  std::vector<int32_t> tokens;
  std::vector<int> slot, pos;
  int n_seqs = 0;             // sequences (runs of equal slots) in the pass
  std::vector<SeqRows> seqs;  // those sequences, in row order
  void assign(std::span<const BatchRow> rows, int vocab_size, int slots, int capacity);
};

// Number of sequences (runs of equal slots) in a batch.
int count_sequences(std::span<const BatchRow> rows);

// Throws ds::Error for an unknown token id, a slot outside 0..slots-1, a position outside the
// capacity, or rows of one sequence whose positions are not consecutive.
void check_batch_rows(std::span<const BatchRow> rows, int vocab_size, int slots, int capacity);

}  // namespace ds
