#!/usr/bin/env bash
# What explain costs on the demo's pair (issue 47 item 7): `driftscope demo` (fp32 batch 1
# invariant against bf16 batch 8 heuristic, the bundled kjv-llama's 32 prompts, 120 new tokens),
# then, each in a fresh folder, `zoom` of the pair (the replays explain builds on, --after 0 as
# explain replays) and `explain` of it; then explain again in its folder (everything kept: the
# cost of reading the trials back). Prints the wall seconds of each and explain's trial counts.
# Usage: bench/explain_demo.sh BUILD_DIR [JOBS]
set -euo pipefail
build="${1:?usage: bench/explain_demo.sh BUILD_DIR [JOBS]}"
jobs="${2:-2}"
exe="$(cd "$build" && pwd)/driftscope"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
seconds() {  # wall seconds of a command, its output discarded
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
demo=$(seconds "$exe" demo --out "$work/demo")
zoom=$(seconds "$exe" zoom "$work/demo/a.h5" "$work/demo/b.h5" -o "$work/zoom" --after 0 -j "$jobs" -q)
explain=$(seconds "$exe" explain "$work/demo/a.h5" "$work/demo/b.h5" -o "$work/explain" -j "$jobs" -q)
again=$(seconds "$exe" explain "$work/demo/a.h5" "$work/demo/b.h5" -o "$work/explain" -j "$jobs" -q)
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-52s %8s\n' "what" "wall s"
printf '%-52s %8.1f\n' "demo (both runs and the diff)" "$demo"
printf '%-52s %8.1f\n' "zoom --after 0 (the replays and attributions)" "$zoom"
printf '%-52s %8.1f\n' "explain (its zoom, then the trials)" "$explain"
printf '%-52s %8.1f\n' "explain again (every trial kept)" "$again"
python3 - "$work/explain/explain.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
f = r["sequences"]
ops = [x["ops"] for x in f if x.get("ops") and x["ops"]["status"] in ("found", "none")]
print("flips %d: explained %d, no cause %d, unresolved %d" % (len(f), r["explained"], r["no_cause"], r["unresolved"]))
print("knob trials: %d runs (each replays every flip); per flip at most %d" % (r["trials"]["knob_runs"], max(x["knob_trials"] for x in f)))
print("op trials: %d runs over %d flips (per flip min %d, median %d, max %d)"
      % (r["trials"]["op_runs"], len(ops), min(o["trials"] for o in ops), sorted(o["trials"] for o in ops)[len(ops) // 2],
         max(o["trials"] for o in ops)))
print("summary: " + r["summary"])
EOF
