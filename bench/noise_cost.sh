#!/usr/bin/env bash
# What the noise floor and the observer proof cost (issue 48, item 7), on the demo's prompts and
# its A (fp32, batch 1, 120 new tokens; docs/cli.md "demo"): calibrate's wall time for N replays
# and the bytes it writes (the floor file, and the most its work folder held), then run's wall
# time with and without --certify, for the default probes and for every probe, the runs
# alternating so that both see the same load.
#   bench/noise_cost.sh [BUILD_DIR] [WORK_DIR]     RUNS=99 JOBS=2 REPS=3
set -euo pipefail
build=${1:-build}
work=${2:-$(mktemp -d)}
ds="$build/driftscope"
runs=${RUNS:-99}
jobs=${JOBS:-2}
reps=${REPS:-3}
prompts=models/kjv-llama/prompts.txt
mkdir -p "$work"
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores);" \
  "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
secs() { local t0=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $t0" | bc; }

"$ds" run --prompts "$prompts" -n 120 --probes none -q --force -o "$work/a.h5"
rm -rf "$work/floor.h5" "$work/floor.h5.calibrate" "$work/done" "$work/peak"
echo 0 >"$work/peak"
# the work folder's size, sampled while calibrate runs
( peak=0; while [ ! -e "$work/done" ]; do
    s=$(du -sb "$work/floor.h5.calibrate" 2>/dev/null | cut -f1 || true); s=${s:-0}
    [ "$s" -gt "$peak" ] && peak=$s && echo "$peak" >"$work/peak"
    sleep 0.5
  done ) &
t=$(secs "$ds" calibrate "$work/a.h5" -o "$work/floor.h5" --runs "$runs" -j "$jobs" -q)
touch "$work/done"
wait
echo "calibrate, N = $runs, -j $jobs, 32 prompts x 120 tokens (fp32 batch 1): ${t} s;" \
  "floor file $(stat -c %s "$work/floor.h5") bytes; work folder at most $(cat "$work/peak") bytes;" \
  "trace A $(stat -c %s "$work/a.h5") bytes"

for probes in default all; do
  plain=() certified=()
  for r in $(seq "$reps"); do
    plain+=("$(secs "$ds" run --prompts "$prompts" -n 120 --probes "$probes" -q --force -o "$work/p.h5")")
    certified+=("$(secs "$ds" run --prompts "$prompts" -n 120 --probes "$probes" --certify -q --force \
      -o "$work/c.h5")")
  done
  p=$(printf '%s\n' "${plain[@]}" | sort -n | sed -n "$(((reps + 1) / 2))p")
  c=$(printf '%s\n' "${certified[@]}" | sort -n | sed -n "$(((reps + 1) / 2))p")
  echo "run --probes $probes: ${p} s, with --certify ${c} s (median of $reps each): $(echo "scale=2; $c / $p" | bc)x"
done
"$ds" show "$work/c.h5" 2>/dev/null | grep -i certif || true
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
