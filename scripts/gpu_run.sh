#!/usr/bin/env bash
# Runs on a lent GPU machine, from the repository root, with .gpu/bundle.tar.xz carried
# (scripts/gpu_bundle.sh): unpacks the CUDA build, makes the paths compiled into it valid
# (/work/main = this checkout), runs the [cuda] tests, then the GPU benchmarks when asked.
#   bash scripts/gpu_run.sh [tests|ops|bench|cpu|explain|all] [extra Catch2 args for the tests]
# cpu: bench_cpu_decode on the machine's CPU (a quiet many-core host, unlike the development VM),
# beside the llama2.c peer binaries in .gpu/peer/ when carried (run, run-omp, tokenizer.bin).
# ops: bench_ops over the op table (tests/ops): each case validated (CUDA vs CPU), then timed.
# explain: driftscope explain of two CUDA traces of the bundled model (fp32 against bf16 batch 8)
# and of a CPU trace against a CUDA one: the knob level's trials on the GPU (issue 47).
# bench: synthesises a Qwen2-7B-shape checkpoint, runs the decode and prefill benchmarks and the
# comparison with transformers (scripts/hf_compare.py).
# all: everything issue 49 measures, in one call of the device tool (docs/cuda.md, "Running on a
# lent GPU machine"): the [cuda] tests, the observer test alone (its exit code is a result), the
# seeds' experiment (scripts/gpu_flips.sh, CUDA and the CPU emulation, and the transformers
# recorder) beside them, then on a quiet GPU the decode benchmark at batch 1, 8, 16, 32, the
# prefill benchmark with its per-op profile, transformers' decode at the same batches, the
# memory refusal, scripts/hf_compare.py; then scripts/gpu_results.py. Each step has a time limit
# inside the call's; $OUT gets gpu_run_all.log, results.tar.xz (every log, report and JSON) and
# gpu-DATE.json.
# Everything it prints is also written to $OUT (when set) as gpu_run_<mode>.log.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-tests}
shift || true
log=${OUT:-/tmp}/gpu_run_${what}.log
exec > >(tee "$log") 2>&1
root=$(pwd)
if [ "$root" != /work/main ]; then
  mkdir -p /work
  ln -sfn "$root" /work/main
fi
tar -C /work/main -xJf .gpu/bundle.tar.xz
export LD_LIBRARY_PATH=/work/main/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
/work/main/build-cuda/driftscope --version || true
rc=0
if [ "$what" = all ]; then
  bash scripts/gpu_all.sh
  exit $?
fi
if [ "$what" = tests ]; then
  /work/main/build-cuda/tests/driftscope_cuda_tests --durations yes "$@" || rc=$?
  echo "cuda tests exit code: $rc"
fi
if [ "$what" = ops ]; then
  /work/main/build-cuda/bench/bench_ops --min-ms 5 || rc=$?
  echo "bench_ops exit code: $rc"
fi
if [ "$what" = cpu ]; then
  lscpu | grep -E 'Model name|^CPU\(s\)' || true
  peer=()
  [ -x .gpu/peer/run ] && peer=(--peer .gpu/peer/run --peer-omp .gpu/peer/run-omp
                                --peer-tokenizer .gpu/peer/tokenizer.bin)
  /work/main/build-cuda/bench/bench_cpu_decode --rounds 3 "${peer[@]}" || rc=$?
fi
if [ "$what" = explain ]; then
  # explain on the device (issue 47): the knob level's trials run on the GPU; with A on the CPU
  # and B on the GPU, device is a knob and the op level says it is CPU-only
  w=/tmp/ds-explain
  rm -rf "$w" && mkdir -p "$w"
  d=/work/main/build-cuda/driftscope
  p=models/kjv-llama/prompts.txt
  $d run -q -n 32 --probes none --prompts $p --device cuda -o $w/a.h5 &&
    $d run -q -n 32 --probes none --prompts $p --device cuda --dtype bf16 --batch 8 \
      --gemm-policy heuristic -o $w/b.h5 &&
    $d run -q -n 32 --probes none --prompts $p -o $w/c.h5 || rc=$?
  time $d explain $w/a.h5 $w/b.h5 -o $w/gpu -j 4 || rc=$?
  time $d explain $w/c.h5 $w/a.h5 -o $w/cpu-gpu -j 4 || rc=$?
  [ -n "${OUT:-}" ] && (cd $w && tar --exclude='*.h5' -cJf "$OUT/explain.tar.xz" $(ls -d gpu cpu-gpu 2>/dev/null))
fi
if [ "$what" = bench ]; then
  model=/tmp/ds-qwen2-7b
  [ -d "$model" ] || /work/main/build-cuda/driftscope synth --shape qwen2-7b -o "$model"
  /work/main/build-cuda/bench/bench_gpu_decode "$model" --batch 1 --dtype bf16 --tokens 64
  /work/main/build-cuda/bench/bench_gpu_prefill "$model" --tokens 2048 --dtype bf16
  # Against transformers (torch is there): per-layer drift and eager-generate tokens/s.
  /work/main/build-cuda/driftscope run -m "$model" --prompt-ids 1,100,200,300,400,500,600,700 \
    -n 64 --device cuda --dtype bf16 --probes 'embed,L*/out,final_norm' --force -o /tmp/ds-hf.h5
  python3 scripts/hf_compare.py "$model" /tmp/ds-hf.h5 --dtype bf16 --device cuda
fi
exit $rc
