#!/usr/bin/env bash
# The seeds' grid at the bundled model's scale: a cheap first pass (sweep --probes none) plus a
# zoom of bf16 batch 1 vs 8, against today's sweep of the same grid with every run's default
# probes (and with --probes all). Prints bytes and wall time of each side by side.
#   bench/zoom_scale.sh [BUILD_DIR] [WORK_DIR]     (default: build, a fresh temp dir)
# The machine is shared: wall times include whatever else runs; run it once, on a quiet machine.
set -euo pipefail
build=${1:-build}
work=${2:-$(mktemp -d)}
ds="$build/driftscope"
grid=@configs/grid-seeds-12.txt
prompts=models/kjv-llama/prompts.txt
jobs=${JOBS:-2}
now() { date +%s.%N; }
bytes() { du -sb --exclude=logs "$@" | awk '{s += $1} END {printf "%.0f\n", s}'; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b - a}'; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
t0=$(now)
"$ds" sweep --grid "$grid" --prompts "$prompts" --probes none -o "$work/pass1" -j "$jobs" -q
t1=$(now)
# bf16 batch 1: the grid's bf16 heuristic tp-1 batch-8 configuration with batch 1 (the grid has
# no batch 1), as the reference A of the zoom
b8=dtype-bf16_gemm_policy-heuristic_tp-1_batch-8
"$ds" run --config "$work/pass1/configs/$b8.toml" --batch 1 --prompts "$prompts" --probes none \
  -o "$work/bf16-batch-1.h5" -q
t2=$(now)
"$ds" zoom "$work/bf16-batch-1.h5" "$work/pass1/$b8.h5" -o "$work/zoom" -j "$jobs" -q \
  > "$work/zoom-aggregate.txt"
t3=$(now)
"$ds" sweep --grid "$grid" --prompts "$prompts" -o "$work/today" -j "$jobs" -q
t4=$(now)
"$ds" sweep --grid "$grid" --prompts "$prompts" --probes all -o "$work/all" -j "$jobs" -q
t5=$(now)

p1=$(bytes "$work/pass1"); b1=$(bytes "$work/bf16-batch-1.h5"); z=$(bytes "$work/zoom")
today=$(bytes "$work/today"); all=$(bytes "$work/all")
zoomed=$(python3 -c "import json;print(len(json.load(open('$work/zoom/zoom.json'))['sequences']))")
replayed=$(python3 -c "import json;print(len(json.load(open('$work/zoom/zoom.json'))['replay']))")
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-50s %14s %10s\n' "what" "bytes" "wall s"
printf '%-50s %14s %10s\n' "pass 1: sweep --probes none (36 configs)" "$p1" "$(secs "$t0" "$t1")"
printf '%-50s %14s %10s\n' "  + bf16 batch 1 run, --probes none" "$b1" "$(secs "$t1" "$t2")"
printf '%-50s %14s %10s\n' "  + zoom bf16 1 vs 8 ($zoomed flips, $replayed seqs)" "$z" \
  "$(secs "$t2" "$t3")"
printf '%-50s %14s %10s\n' "pass 1 + zoom, total" "$((p1 + b1 + z))" \
  "$(secs "$t0" "$t3")"
printf '%-50s %14s %10s\n' "today: sweep (default probes)" "$today" "$(secs "$t3" "$t4")"
printf '%-50s %14s %10s\n' "today: sweep --probes all" "$all" "$(secs "$t4" "$t5")"
awk -v a="$((p1 + b1 + z))" -v d="$today" -v l="$all" \
  'BEGIN {printf "bytes ratio: default/zoomed %.1fx, all/zoomed %.1fx\n", d / a, l / a}'
echo "work dir: $work"
