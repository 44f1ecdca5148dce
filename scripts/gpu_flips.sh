#!/usr/bin/env bash
# The seeds' experiment on the bundled kjv-llama (32 prompts x 256 tokens, default probes):
# batch 1 against 8 and 32 in bf16, fp16 and fp32, on the CUDA backend with cuBLAS and on the CPU
# emulation (gemm_policy heuristic: split-K and split-KV chosen from the shape, as a BLAS library
# and a flash-decoding kernel would), each pair diffed and summarised (scripts/flips_summary.py);
# with --recorder also transformers through the recorder (bf16, eager and sdpa, batch 1 against
# 8) on the same device.
#   scripts/gpu_flips.sh OUTDIR [--devices cuda,cpu] [--recorder] [--tokens 256]
# Writes OUTDIR/flips.md and OUTDIR/flips.json (the table), and the diff reports it read.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_flips.sh OUTDIR [--devices cuda,cpu] [--recorder] [--tokens N]}
shift
devices=cuda,cpu
recorder=""
tokens=256
while [ $# -gt 0 ]; do
  case "$1" in
    --devices) devices=$2; shift 2 ;;
    --recorder) recorder=1; shift ;;
    --tokens) tokens=$2; shift 2 ;;
    *) echo "gpu_flips: unknown argument $1" >&2; exit 2 ;;
  esac
done
ds=${DRIFTSCOPE:-build-cuda/driftscope}
model=models/kjv-llama
prompts=$model/prompts.txt
mkdir -p "$out"
pairs=()
run() {  # name, flags...
  local name=$1
  shift
  "$ds" run -m "$model" --prompts "$prompts" -n "$tokens" -q --force -o "$out/$name.h5" "$@" ||
    echo "gpu_flips: run $name failed ($*)" >&2
}
pair() {  # label, a, b
  if "$ds" diff -q --json "$out/diff-$1.json" "$out/$2.h5" "$out/$3.h5"; [ $? -le 1 ]; then
    pairs+=("$1=$out/diff-$1.json")
  else
    echo "gpu_flips: diff $1 failed" >&2
  fi
}
IFS=, read -r -a devs <<<"$devices"
for dev in "${devs[@]}"; do
  for dtype in bf16 fp16 fp32; do
    for b in 1 8 32; do
      run "$dev-$dtype-b$b" --device "$dev" --dtype "$dtype" --batch "$b" --gemm-policy heuristic
    done
    pair "$dev-$dtype-b1-b8" "$dev-$dtype-b1" "$dev-$dtype-b8"
    pair "$dev-$dtype-b1-b32" "$dev-$dtype-b1" "$dev-$dtype-b32"
  done
done
if [[ ",$devices," == *",cuda,"* && ",$devices," == *",cpu,"* ]]; then
  for dtype in bf16 fp32; do  # how far the emulation is from the device at the same batch
    pair "cpu-vs-cuda-$dtype-b1" "cpu-$dtype-b1" "cuda-$dtype-b1"
    pair "cpu-vs-cuda-$dtype-b8" "cpu-$dtype-b8" "cuda-$dtype-b8"
  done
fi
if [ -n "$recorder" ]; then
  for attn in eager sdpa; do
    for b in 1 8; do
      PYTHONPATH=python${PYTHONPATH:+:$PYTHONPATH} python3 -m driftscope_trace run -m "$model" \
        --prompts "$prompts" -n "$tokens" --device cuda --dtype bf16 --attn-implementation "$attn" \
        --batch "$b" --force -o "$out/hf-$attn-b$b.h5" ||
        echo "gpu_flips: recorder $attn batch $b failed" >&2
    done
    pair "hf-$attn-bf16-b1-b8" "hf-$attn-b1" "hf-$attn-b8"
  done
fi
python3 scripts/flips_summary.py "${pairs[@]}" --json "$out/flips.json" | tee "$out/flips.md"
