#!/usr/bin/env bash
# The flip prediction of the noise floor against what a batch change does (issue 48, item 3): over
# the seeds' 12-configuration grid (configs/grid-seeds-12.txt: gemm_policy x tp x batch, at one
# dtype), each configuration's floor (calibrate, N replays) predicts per sequence the probability
# that reordering alone flips it; the observed flips are those of the configuration against its
# batch-1 twin. Prints the per-configuration totals, a reliability table and the Brier score
# (bench/floor_reliability.py).
#   bench/floor_reliability.sh [BUILD_DIR] [WORK_DIR]     (default: build, a fresh temp dir)
#   DTYPE=bf16 RUNS=99 MAX_NEW=64 JOBS=2
# The machine is shared: run it once, on a quiet machine if timings matter. Its replays run the
# executable of BUILD_DIR: do not rebuild it meanwhile. Resumable: run it again with the same
# WORK_DIR.
set -euo pipefail
build=${1:-build}
work=${2:-$(mktemp -d)}
ds="$build/driftscope"
dtype=${DTYPE:-bf16}
runs=${RUNS:-99}
max_new=${MAX_NEW:-64}
jobs=${JOBS:-2}
prompts=models/kjv-llama/prompts.txt
mkdir -p "$work/floors" "$work/diffs"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
start=$(date +%s)
"$ds" sweep --grid "gemm_policy=invariant,heuristic tp=1,2 batch=8,16,32" --dtype "$dtype" \
  --max-new "$max_new" --prompts "$prompts" --probes none -o "$work/grid" -j "$jobs" -q
"$ds" sweep --grid "gemm_policy=invariant,heuristic tp=1,2" --batch 1 --dtype "$dtype" \
  --max-new "$max_new" --prompts "$prompts" --probes none -o "$work/twins" -j "$jobs" -q
for t in "$work"/grid/*.h5; do
  name=$(basename "$t" .h5)
  twin=${name%_batch-*}
  [ -f "$work/floors/$name.h5" ] ||  # resumed: floors written are kept
    "$ds" calibrate "$t" -o "$work/floors/$name.h5" --runs "$runs" -j "$jobs" -q
  "$ds" diff "$t" "$work/twins/$twin.h5" --floor "$work/floors/$name.h5" \
    --json "$work/diffs/$name.json" -q
done
echo "wall time: $(($(date +%s) - start)) s; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/floor_reliability.py" "$work/diffs"
