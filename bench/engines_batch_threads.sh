#!/usr/bin/env bash
# Does a real engine's bf16 run change with the batch size or the thread count on this CPU?
# transformers (the venv given, default .venv-current) on kjv-llama, the 32 bundled prompts x 100
# greedy tokens: bf16 at batch 1 and 8 and 1 and 2 threads, fp32 at batch 1 and 8 as the control,
# then `driftscope diff` of each pair (flips, onset, drift). Results: bench/RESULTS.md.
# Usage: bench/engines_batch_threads.sh OUT_DIR [VENV] [DRIFTSCOPE]
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"; venv="${2:-.venv-current}"; ds="${3:-build/driftscope}"
mkdir -p "$out"
args=(-m models/kjv-llama --prompts models/kjv-llama/prompts.txt -n 100 --probes 'L*/out,final_norm' --force -q)
for cfg in "bf16 1 1" "bf16 8 1" "bf16 1 2" "fp32 1 1" "fp32 8 1"; do
  set -- $cfg
  start=$(date +%s)
  OMP_NUM_THREADS=$3 "$venv/bin/driftscope-trace" run "${args[@]}" --dtype "$1" --batch "$2" --threads "$3" \
    -o "$out/${1}_b$2_t$3.h5" 2>/dev/null
  echo "$1 batch $2 threads $3: $(($(date +%s) - start)) s"
done
for pair in "bf16_b1_t1 bf16_b8_t1" "bf16_b1_t1 bf16_b1_t2" "fp32_b1_t1 fp32_b8_t1" "fp32_b1_t1 bf16_b1_t1"; do
  set -- $pair
  echo "== diff $1 $2"
  "$ds" diff "$out/$1.h5" "$out/$2.h5" | sed -n '/^config/,/^── seq/p' | head -50
done
