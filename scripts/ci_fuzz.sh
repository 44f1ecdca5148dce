#!/usr/bin/env bash
# CI: fuzzes every libFuzzer target of build-asan/ (made by scripts/ci_sanitize.sh) for a fixed
# number of executions from a fixed seed, two targets at a time, so that the same commit gets the
# same verdict on any machine (docs/fuzzing.md "CI fuzzing"). Each target starts from its
# committed corpus tests/fuzz/corpus/<target>/ (as a sorted list) and an empty scratch corpus, and
# runs its count from ci_runs below (-runs, -seed; no time limit). A fault inside HDF5 (known,
# tests/fuzz/known_hangs/) is reported and the target resumes with the next seed for the runs left,
# so the total stays fixed. Any other fault fails the run: the whole log of the failing run and of
# the replay of its input alone are printed, the input is copied to
# tests/fuzz/corpus/<target>/regression-<kind>-<sha1> (commit it with the fix: the replay test
# fuzz_replay_<target> then runs it in every build), with the command that reproduces it and the
# input in base64 (CI machines are gone afterwards). Finding new bugs is scripts/fuzz_explore.sh's
# job, beside CI.
# Usage: scripts/ci_fuzz.sh [TARGET...] (default: all). Environment: FUZZ_SEED (default 1),
# FUZZ_RUNS (one count for every target instead of ci_runs, for quick checks), FUZZ_JOBS (default
# 2), FUZZ_WORK (scratch folder, default build-asan/ci-fuzz; emptied first).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitizer_env.sh
source scripts/fuzz_lib.sh

# Executions per target: about 60 s each at the rates measured on a 2-core machine running two
# targets at once (docs/fuzzing.md "Cost"), so the stage takes about 5 minutes. The counts include
# the committed corpus, which each target runs first.
declare -A ci_runs=(
  [hf_config]=210000
  [llama2c_model]=400000
  [llama2c_tokenizer]=180000
  [prompts]=45000
  [run_config_toml]=30000
  [safetensors]=170000
  [tokenizer_encode]=280000
  [tokenizer_json]=60000
  [trace_reader]=1000
)
seed=${FUZZ_SEED:-1}
jobs=${FUZZ_JOBS:-2}
work=${FUZZ_WORK:-build-asan/ci-fuzz}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(fuzz_all_targets)
fuzz_check_targets "${targets[@]}"
for t in "${targets[@]}"; do
  [ -n "${FUZZ_RUNS:-}" ] || [ -n "${ci_runs[$t]:-}" ] || {
    echo "ci_fuzz: no run count for fuzz_$t: add one to ci_runs in scripts/ci_fuzz.sh" >&2
    exit 2
  }
done

# The classifier first, on hand-made logs of every form it must read.
if ! selftest=$(fuzz_classify_selftest); then
  echo "$selftest"
  echo "ci_fuzz: the classifier (scripts/fuzz_lib.sh) misreads a hand-made log" >&2
  exit 1
fi

rm -rf "$work"
mkdir -p "$work"
[ ${#FUZZ_WRAP[@]} -gt 0 ] ||
  echo "ci_fuzz: note: address-space randomisation cannot be turned off here (setarch -R)"
echo "ci_fuzz: ${#targets[@]} targets, seed $seed, $jobs at a time, scratch $work"

ci_one() {  # TARGET
  FUZZ_RUNS=${FUZZ_RUNS:-${ci_runs[$1]}} FUZZ_SEED=$seed fuzz_loop "$1" "$work/$1" 2>&1
}
start=$(date +%s)
fuzz_pool "$jobs" ci_one "${targets[@]}"
failed=("${FUZZ_FAILED[@]}")
wall=$(($(date +%s) - start))

printf '%-18s %8s %8s %8s %11s %8s %6s %6s\n' target runs seconds "execs/s" executions corpus new known
for t in "${targets[@]}"; do
  d=$work/$t
  secs=$(cat "$d/seconds" 2>/dev/null || echo 0)
  execs=$(cat "$d/execs" 2>/dev/null || echo 0)
  corp=$(sed -n 's/.*DONE .* corp: \([0-9]*\)\/.*/\1/p' "$d"/run.*.log 2>/dev/null | tail -1)
  printf '%-18s %8s %8s %8s %11s %8s %6s %6s\n' "$t" "${FUZZ_RUNS:-${ci_runs[$t]}}" "$secs" \
    "$((execs / (secs > 0 ? secs : 1)))" "$execs" "${corp:--}" "$(fuzz_new_inputs "$d")" \
    "$(awk '$2 == "hdf5"' "$d/faults" 2>/dev/null | wc -l)"
done
echo "ci_fuzz: ${wall} s"

for t in "${targets[@]}"; do
  while read -r k verdict fc rc input s; do
    [ "$verdict" = hdf5 ] || continue
    echo "ci_fuzz: fuzz_$t run $k (seed $s): a known fault inside HDF5, not a failure" \
      "(tests/fuzz/known_hangs/README.md): fuzz run $fc, replay alone $rc;" \
      "input sha1 $(sha1sum <"$input" | cut -c1-40), $(stat -c %s "$input") bytes"
  done <"$work/$t/faults"
done

status=0
for t in "${failed[@]}"; do
  status=1
  d=$work/$t
  read -r k verdict fc rc input s < <(tail -1 "$d/faults") || true
  if [ -z "${k:-}" ]; then
    echo "ci_fuzz: fuzz_$t FAILED without a fault recorded; its logs are in $d"
    continue
  fi
  echo "================================================================================"
  case $verdict in
    ours) echo "ci_fuzz: fuzz_$t FAILED: a fault that is not HDF5's (fuzz run: $fc; replay of the input alone: $rc)" ;;
    disagree) echo "ci_fuzz: fuzz_$t FAILED: the fuzz run and the replay of its input alone classify" \
      "the fault differently (fuzz run: $fc; replay: $rc), so CI cannot call it HDF5's: compare the two logs below" ;;
    *) echo "ci_fuzz: fuzz_$t FAILED: libFuzzer stopped (fuzz run: $fc) without an input to replay" ;;
  esac
  echo "ci_fuzz: the whole log of run $k ($(cat "$d/cmd.$k")):"
  cat "$d/run.$k.log"
  if [ -f "$d/replay.$k.log" ]; then
    echo "ci_fuzz: the whole log of the replay of its input alone:"
    cat "$d/replay.$k.log"
  fi
  echo "================================================================================"
  if [ -f "$input" ]; then
    name=$(basename "$input")
    kind=$(echo "$fc" | cut -d/ -f2)
    dest=tests/fuzz/corpus/$t/regression-$kind-$(sha1sum <"$input" | cut -c1-40)
    cp "$input" "$dest"
    echo "ci_fuzz: the input ($name, $(stat -c %s "$input") bytes) is now $dest"
    echo "ci_fuzz: reproduce it alone:  $(fuzz_repro_command "$t" "$dest")"
  fi
  echo "ci_fuzz: reproduce this whole run: FUZZ_SEED=$seed scripts/ci_fuzz.sh $t  (run $k used seed $s)"
  if [ -f "$input" ]; then
    echo "ci_fuzz: the input in base64 (base64 -d > $dest):"
    base64 -w 0 "$input"
    echo
  fi
done
exit $status
