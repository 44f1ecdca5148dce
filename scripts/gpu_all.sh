#!/usr/bin/env bash
# `scripts/gpu_run.sh all` (which unpacks the bundle first): issue 49's whole device run in one
# call, each step under its own time limit inside the call's (GPU_ALL_SECONDS, default 560), the
# results kept as they come. GPU_STEPS="decode prefill ..." runs only the steps named (a later call
# of a session reruns only what failed). See scripts/gpu_run.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
budget=${GPU_ALL_SECONDS:-560}
b=/work/main/build-cuda
r=/tmp/gpu-results
model=/tmp/ds-qwen2-7b
rm -rf "$r"
mkdir -p "$r"
export PYTHONUNBUFFERED=1
left() { echo $((budget - ($(date +%s) - start))); }
# step NAME SECONDS CMD...: runs CMD for at most SECONDS (and never past the budget less 15 s)
step() {
  local name=$1 limit=$2
  shift 2
  if [ -n "${GPU_STEPS:-}" ] && [[ " $GPU_STEPS " != *" $name "* ]]; then
    return 0
  fi
  local avail=$(($(left) - 15))
  [ "$avail" -lt "$limit" ] && limit=$avail
  if [ "$limit" -le 5 ]; then
    echo "== $name: skipped, the call's time is spent" | tee -a "$r/steps.txt"
    return 124
  fi
  echo "== $name (at most ${limit} s, $(left) s left)"
  local t0=$(date +%s) rc=0
  timeout "$limit" "$@" >"$r/$name.log" 2>&1 || rc=$?
  echo "== $name: exit $rc after $(($(date +%s) - t0)) s" | tee -a "$r/steps.txt"
  tail -n 25 "$r/$name.log"
  return $rc
}
finish() {
  python3 scripts/gpu_results.py "$r" -o "$r/gpu-$(date +%F).json" >"$r/results.log" 2>&1
  cat "$r/results.log"
  if [ -n "${OUT:-}" ]; then
    cp "$r/gpu-$(date +%F).json" "$OUT/" 2>/dev/null
    tar -C "$r" --exclude='*.h5' -cJf "$OUT/results.tar.xz" .
  fi
}
trap finish EXIT

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$r/device.txt"
lscpu | grep -E 'Model name|^CPU\(s\)' | tee "$r/host.txt"
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' |
  tee -a "$r/host.txt"
python3 -c 'import vllm' >/dev/null 2>&1 && echo "vllm importable" | tee -a "$r/host.txt"
python3 -c 'import sglang' >/dev/null 2>&1 && echo "sglang importable" | tee -a "$r/host.txt"

# Beside the tests (timing does not matter there): the 7B checkpoint and the seeds' experiment.
(timeout 240 "$b/driftscope" synth --shape qwen2-7b -o "$model" >"$r/synth.log" 2>&1
 echo "synth exit $?" >>"$r/synth.log") &
synth=$!
# The seeds' experiment ran on 2026-11-28 (bench/RESULTS.md): again only with GPU_FLIPS=1.
flips=""
if [ -n "${GPU_FLIPS:-}" ]; then
  (DRIFTSCOPE="$b/driftscope" timeout 300 bash scripts/gpu_flips.sh "$r/flips" --recorder \
     >"$r/flips.log" 2>&1; echo "flips exit $?" >>"$r/flips.log") &
  flips=$!
fi

step cuda_tests 180 "$b/tests/driftscope_cuda_tests" --durations yes "~[graphs]"
step observer 90 "$b/tests/driftscope_cuda_tests" --durations yes "[graphs]"
rc=$?
[ -e "$r/observer.log" ] && echo $rc >"$r/observer.txt"  # not when GPU_STEPS left it out
# run --certify on the device (issue 48): every probe, bf16 at batch 8; the verdict in show
step certify 40 bash -c "$b/driftscope run --prompts models/kjv-llama/prompts.txt -n 64 \
  --device cuda --dtype bf16 --batch 8 --probes all --certify --force -q -o /tmp/ds-certify.h5 &&
  $b/driftscope show /tmp/ds-certify.h5 | grep -i certif"
# explain's knob-level trials on the GPU (issue 49 item 8), on the bundled model while the 7B one
# is written: scripts/gpu_run.sh explain
step explain 120 bash scripts/gpu_run.sh explain
wait "$synth"
tail -n 3 "$r/synth.log"
if [ -n "$flips" ]; then
  wait "$flips"  # the benchmarks want the GPU to themselves
  tail -n 40 "$r/flips.log"
fi

# The trace's host path on the device's own host CPU (bench_trace_host_cost: the writer's rate and
# the paced traced/untraced ratio beside the decode benchmark's measured one)
step trace_host 60 "$b/bench/bench_trace_host_cost" 1 64 1,8,32 6.5
step decode 150 "$b/bench/bench_gpu_decode" "$model" --batch 1,8,16,32 --tokens 64 --reps 3 \
  --json "$r/decode.json"
step prefill 110 "$b/bench/bench_gpu_prefill" "$model" --tokens 2048 --reps 3 --profile \
  --json "$r/prefill.json"
step transformers 130 python3 bench/gpu_transformers.py "$model" --batches 1,8,16,32 \
  --tokens 64 --json "$r/transformers.json"

# A run that cannot fit: 128 sequences of 30,016 positions of a 7B model's bf16 KV cache (about 220
# GiB): one driftscope line, a hint, exit 2, no trace.
for i in $(seq 128); do echo "$i $((i * 7)) $((i * 13))"; done >"$r/ids.txt"
awk '{print "{\"ids\": [" $1 ", " $2 ", " $3 "]}"}' "$r/ids.txt" >"$r/prompts128.jsonl"
step oom 40 "$b/driftscope" run -m "$model" --prompts "$r/prompts128.jsonl" -n 30000 \
  --device cuda --dtype bf16 --batch 128 -o "$r/oom.h5"
echo "oom trace left behind: $([ -e "$r/oom.h5" ] && echo yes || echo no)" | tee -a "$r/steps.txt"

# Where each decode step's device time goes, kernel by kernel (CUPTI records; graphs give no launch
# gaps, so a step costs the sum): batch 1, 8 and 32, 16 tokens, bench/gpu_kernel_profile.py.
cat >"$r/kernel_profile.sh" <<EOF
for bs in 1 8 32; do
  head -n \$bs $r/prompts128.jsonl >$r/k\$bs.jsonl
  $b/driftscope run -m $model --prompts $r/k\$bs.jsonl -n 16 --device cuda --dtype bf16 \
    --batch \$bs --probes none --kernels on --force -q -o /tmp/ds-kp\$bs.h5 || exit
done
python3 bench/gpu_kernel_profile.py /tmp/ds-kp1.h5 /tmp/ds-kp8.h5 /tmp/ds-kp32.h5 \
  --json $r/kernel_profile.json
EOF
step kernel_profile 60 bash "$r/kernel_profile.sh"

step hf_trace 60 "$b/driftscope" run -m "$model" --prompt-ids 1,100,200,300,400,500,600,700 \
  -n 32 --device cuda --dtype bf16 --probes all --force -o /tmp/ds-hf.h5
step hf_ops 90 python3 scripts/hf_ops_compare.py "$model" /tmp/ds-hf.h5 --dtype bf16 --attn eager \
  --device cuda --json "$r/hf_ops.json"

# What kernel records cost a traced run (CUPTI on every launch, and no CUDA graphs with them):
# the same 8 x 64 tokens with --kernels off and on.
head -n 8 "$r/prompts128.jsonl" >"$r/prompts8.jsonl"
for k in off on; do
  step "kernels_$k" 40 bash -c "time $b/driftscope run -m $model --prompts $r/prompts8.jsonl \
    -n 64 --device cuda --dtype bf16 --batch 8 --kernels $k --force -o /tmp/ds-k$k.h5"
done
step hf_compare 90 python3 scripts/hf_compare.py "$model" /tmp/ds-hf.h5 --dtype bf16 --device cuda
