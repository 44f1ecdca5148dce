#!/usr/bin/env bash
# llama.cpp's own precisions against its F32, beside driftscope's against its fp32: kjv-llama
# converted with llama.cpp's converter (tests/engines/convert_gguf.py) to F32, F16, BF16 and Q8_0,
# each recorded by `driftscope-trace llamacpp` (F32 KV cache; and F32 weights with an F16 cache)
# on the 32 bundled prompts x 100 greedy tokens with every probe; driftscope fp32, fp16 and bf16
# on the same prompts; then `driftscope diff --json` of each pair, summed up as flips, the median
# first-flip step, the median relative L2 at L3/out and the onset sites. Needs llama-cpp-python
# and a llama.cpp source tree in the venv (scripts/setup_python.sh). Results: docs/engines.md
# ("llama.cpp's own precisions") and bench/RESULTS.md.
# Usage: bench/engines_llamacpp_precisions.sh OUT_DIR [VENV] [DRIFTSCOPE]
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"; venv="${2:-.venv-current}"; ds="${3:-build/driftscope}"
src="${DRIFTSCOPE_LLAMA_CPP_SRC:-$venv/llama.cpp}"
mkdir -p "$out"
m=models/kjv-llama
common=(--prompts "$m/prompts.txt" -n 100 --probes all --force -q)
for q in f32 f16 bf16 q8_0; do
  "$venv/bin/python" tests/engines/convert_gguf.py "$src" "$m" --outtype "$q" --outfile "$out/$q.gguf" \
    >/dev/null 2>&1
  "$venv/bin/driftscope-trace" llamacpp -m "$out/$q.gguf" --source-model "$m" --kv-type f32 \
    "${common[@]}" -o "$out/llama-$q.h5"
done
"$venv/bin/driftscope-trace" llamacpp -m "$out/f32.gguf" --source-model "$m" --kv-type f16 \
  "${common[@]}" -o "$out/llama-f32-kvf16.h5"
for d in fp32 fp16 bf16; do "$ds" run -m "$m" --dtype "$d" "${common[@]}" -o "$out/ds-$d.h5"; done
for pair in "llama-f32 llama-f16" "llama-f32 llama-bf16" "llama-f32 llama-q8_0" \
  "llama-f32 llama-f32-kvf16" "ds-fp32 ds-fp16" "ds-fp32 ds-bf16" "ds-bf16 llama-bf16"; do
  set -- $pair
  "$ds" diff "$out/$1.h5" "$out/$2.h5" --json "$out/$1_vs_$2.json" >/dev/null || true
  "$venv/bin/python" - "$out/$1_vs_$2.json" "$2 vs $1" <<'PY'
import collections, json, statistics as st, sys
seqs = json.load(open(sys.argv[1]))["sequences"]
flips = [s["first_flip"]["step"] for s in seqs if s.get("first_flip")]
l3 = st.median(next(d["rel_l2_median"] for d in s["drift"] if d["site"] == "L3/out") for s in seqs)
onset = collections.Counter((s.get("onset") or {}).get("site") for s in seqs)
print("%-28s flipped %2d of %d  median first-flip step %5s  median rel. L2 at L3/out %.1e  onset %s"
      % (sys.argv[2], len(flips), len(seqs), st.median(flips) if flips else "-", l3, dict(onset)))
PY
done
