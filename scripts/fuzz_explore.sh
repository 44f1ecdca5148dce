#!/usr/bin/env bash
# Long fuzzing from random seeds, beside CI (docs/fuzzing.md "Exploration"): finds new bugs
# without deciding any landing. Runs every libFuzzer target of build-asan/ (scripts/ci_sanitize.sh
# builds it) for SECONDS each, triages each fault with the classifier CI uses (scripts/fuzz_lib.sh:
# ours or HDF5's, the fuzz run and a replay of the input alone must agree), keeps every log, and
# copies what it found into the repository for review:
#   driftscope faults -> tests/fuzz/corpus/<target>/regression-<kind>-<sha1> (fix, then commit)
#   HDF5's own faults -> tests/fuzz/known_hangs/<target>-hdf5-<kind>-<frame>-<sha1>, one per top
#                        HDF5 frame (a frame already there is not added again), plus a README line
# Faults whose two classifications disagree stay in the results folder only.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
usage: scripts/fuzz_explore.sh [-j JOBS] [-o DIR] [SECONDS] [TARGET...]

Fuzzes each TARGET (default: all) for SECONDS of wall time (default 600) from random seeds (each
printed), JOBS targets at a time (1 or 2, default 1), from the committed corpus. Every fault is
classified as driftscope's or HDF5's by scripts/fuzz_lib.sh (the fuzz log and a replay of the input
alone must agree) and kept:
  driftscope faults  tests/fuzz/corpus/<target>/regression-<kind>-<sha1>
  HDF5 faults        tests/fuzz/known_hangs/<target>-hdf5-<kind>-<frame>-<sha1> (one per top frame)
Logs, inputs and the corpus grown go to DIR (default build-asan/fuzz-explore/<timestamp>/), and a
summary table per target is printed at the end (and written to DIR/summary.txt).
Exit status 0 even when it finds something (it explores; it does not gate).
EOF
}

seconds=600 jobs=1 res="" targets=()
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    -j) jobs=${2:?-j needs a number}; shift ;;
    -j[0-9]*) jobs=${1#-j} ;;
    -o) res=${2:?-o needs a folder}; shift ;;
    [0-9]*) seconds=$1 ;;
    -*) usage >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[[ $jobs =~ ^[12]$ ]] || { echo "fuzz_explore: -j takes 1 or 2 (the machine has two cores)" >&2; exit 2; }
[[ $seconds =~ ^[0-9]+$ ]] && [ "$seconds" -gt 0 ] || { usage >&2; exit 2; }

source scripts/sanitizer_env.sh
source scripts/fuzz_lib.sh
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(fuzz_all_targets)
fuzz_check_targets "${targets[@]}"
res=${res:-build-asan/fuzz-explore/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$res"
echo "fuzz_explore: ${#targets[@]} targets x ${seconds} s, $jobs at a time; results in $res"

# Copies the faults of TARGET into the repository (under a lock: two targets may finish together).
collect() {  # TARGET
  local t=$1 k verdict fc rc input seed owner kind frame sha dest name
  while read -r k verdict fc rc input seed; do
    [ -f "$input" ] || continue
    IFS=/ read -r owner kind frame <<<"$fc"
    sha=$(sha1sum <"$input" | cut -c1-40)
    cp "$input" "$res/$t/fault-$k-$verdict-$sha"
    case $verdict in
      ours)
        # one input per kind and deciding frame in this exploration
        dest=tests/fuzz/corpus/$t/regression-$kind-$sha
        if [ ! -e "$dest" ] && ! grep -qF "$t ours $kind $frame " "$res/kept" 2>/dev/null; then
          cp "$input" "$dest"
          echo "$t ours $kind $frame $dest" >>"$res/kept"
        fi
        ;;
      hdf5)
        # one input per top HDF5 frame: the frame ends the names of the older inputs too
        name=$t-hdf5-$kind-$frame-${sha:0:12}
        if ! compgen -G "tests/fuzz/known_hangs/*-$frame" >/dev/null &&
          ! compgen -G "tests/fuzz/known_hangs/*-$frame-*" >/dev/null &&
          ! compgen -G "tests/fuzz/known_hangs/*-$frame.h5" >/dev/null; then
          cp "$input" "tests/fuzz/known_hangs/$name"
          {
            echo
            echo "\`$name\`: found by scripts/fuzz_explore.sh on $(date +%F) (fuzz_$t, seed $seed)."
            echo "A $kind inside HDF5, \`$frame\` (docs/fuzzing.md \"The classifier\"); the replay"
            echo "of the input alone agrees ($rc). Reproducer:"
            echo
            echo "    $(fuzz_repro_command "$t" "tests/fuzz/known_hangs/$name")"
          } >>tests/fuzz/known_hangs/README.md
          echo "$t hdf5 $kind $frame tests/fuzz/known_hangs/$name" >>"$res/kept"
        fi
        ;;
    esac
  done <"$res/$t/faults"
}

explore_one() {  # TARGET
  local t=$1 status=0
  FUZZ_SECONDS=$seconds FUZZ_KEEP_GOING=1 fuzz_loop "$t" "$res/$t" || status=$?
  {
    flock 9
    collect "$t"
  } 9>"$res/.lock"
  return $status
}

fuzz_pool "$jobs" explore_one "${targets[@]}"

{
  printf '%-18s %7s %11s %8s %8s %10s %5s %6s\n' target seconds executions "execs/s" "new-corp" driftscope hdf5 unclear
  for t in "${targets[@]}"; do
    secs=$(cat "$res/$t/seconds" 2>/dev/null || echo 0)
    execs=$(cat "$res/$t/execs" 2>/dev/null || echo 0)
    ours=$(awk '$2 == "ours"' "$res/$t/faults" | wc -l)
    hdf5=$(awk '$2 == "hdf5"' "$res/$t/faults" | wc -l)
    other=$(awk '$2 != "ours" && $2 != "hdf5"' "$res/$t/faults" | wc -l)
    printf '%-18s %7s %11s %8s %8s %10s %5s %6s\n' "$t" "$secs" "$execs" "$((execs / (secs > 0 ? secs : 1)))" \
      "$(fuzz_new_inputs "$res/$t")" "$ours" "$hdf5" "$other"
  done
  echo
  echo "faults (run, verdict, fuzz-run class, replay class, input, seed), per target:"
  for t in "${targets[@]}"; do
    sed "s|^|  $t |" "$res/$t/faults"
  done
  echo
  echo "kept in the repository:"
  if [ -s "$res/kept" ]; then sed 's/^/  /' "$res/kept"; else echo "  nothing new"; fi
} | tee "$res/summary.txt"
echo "fuzz_explore: logs of every run in $res/<target>/run.K.log (replays: replay.K.log)"
