#!/usr/bin/env bash
# CI: runs every libFuzzer target of build-asan/ (made by scripts/ci_sanitize.sh) for
# FUZZ_SECONDS (default 60) each, two at a time, starting from its seed corpus tests/fuzz/corpus/
# <target>/ (new inputs go to a scratch directory, not the repository). Prints executions per
# second and total executions per target. A crash, sanitizer report, timeout or out-of-memory
# fails the run; its input is copied into the target's corpus as a regression case (commit it
# with the fix: the replay test fuzz_replay_<target> then runs it in every build) and printed in
# base64 for when the machine is gone. Usage: scripts/ci_fuzz.sh [TARGET...] (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitizer_env.sh
seconds=${FUZZ_SECONDS:-60}
bin=build-asan/tests/fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  # the files that define a target (fuzz_target.cpp holds their shared harness)
  for f in $(grep -l LLVMFuzzerTestOneInput tests/fuzz/fuzz_*.cpp); do
    targets+=("$(basename "$f" .cpp | sed 's/^fuzz_//')")
  done
fi
work=$(mktemp -d /tmp/driftscope-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT

# A timeout, a sanitizer report or an allocation over the memory limit whose stack, below
# libFuzzer's handlers, the sanitizer's interceptors, malloc and libc, starts inside libhdf5:
# HDF5 1.10.8 looping on, misreading its own memory for, or trusting a size in a damaged file
# (tests/fuzz/known_hangs/README.md), not driftscope code. Such a fault is reported and its input
# kept, and the target goes on for the rest of its time; anything else (a driftscope frame on
# top, an escaped exception) fails the run.
# The C library functions AddressSanitizer replaces with its own (its frame is named as the libc
# function, inside the fuzz binary): a fault found in one was made by its caller.
libc_intercepted="malloc|calloc|realloc|free|strdup|strndup|strlen|strnlen|strcpy|strncpy|strcat"
libc_intercepted+="|strcmp|strncmp|strchr|strrchr|memcpy|memmove|memset|memcmp|memchr"
hang_in_hdf5() {  # LOG
  grep -q -E "ERROR: libFuzzer: (timeout|out-of-memory \(malloc)|ERROR: AddressSanitizer" "$1" &&
    grep -E "^ +#[0-9]+ " "$1" |
    grep -v -E "libFuzzer|fuzzer::|sanitizer|__interceptor_|__asan|libc\.so| in ($libc_intercepted) " |
    head -1 | grep -q libhdf5
}

fuzz_one() {  # TARGET: libFuzzer runs for $seconds in all; logs $work/TARGET.N.log
  local t=$1 dict=() start run=0 left timeout=25
  # a trace image is read in milliseconds; a short timeout keeps HDF5's hangs from eating the time
  [ "$t" = trace_reader ] && timeout=5
  case $t in
    safetensors | hf_config | tokenizer_json | prompts) dict=(-dict=tests/fuzz/dict/json.dict) ;;
    run_config_toml) dict=(-dict=tests/fuzz/dict/toml.dict) ;;
  esac
  mkdir -p "$work/$t.new" "$work/$t.crash" "$work/$t.hang"
  start=$(date +%s)
  while left=$((seconds - ($(date +%s) - start))); [ "$left" -gt 0 ]; do
    run=$((run + 1))
    if "$bin/fuzz_$t" -max_total_time="$left" -timeout="$timeout" -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$work/$t.crash/" "${dict[@]}" "$work/$t.new" "tests/fuzz/corpus/$t" \
      >"$work/$t.$run.log" 2>&1; then
      break
    elif hang_in_hdf5 "$work/$t.$run.log"; then
      mv "$work/$t.crash"/* "$work/$t.hang/" 2>/dev/null || true
    else
      return 1
    fi
  done
  echo $(($(date +%s) - start)) >"$work/$t.seconds"
}

pids=() failed=()
for t in "${targets[@]}"; do
  [ -x "$bin/fuzz_$t" ] || { echo "ci_fuzz: $bin/fuzz_$t is missing (run scripts/ci_sanitize.sh)"; exit 2; }
  fuzz_one "$t" &
  pids+=("$!:$t")
  if [ ${#pids[@]} -ge 2 ]; then  # two at a time: the CI machine has two cores
    for p in "${pids[@]}"; do wait "${p%%:*}" || failed+=("${p#*:}"); done
    pids=()
  fi
done
for p in "${pids[@]}"; do wait "${p%%:*}" || failed+=("${p#*:}"); done

printf '%-20s %8s %12s %14s %8s %6s\n' target seconds "execs/s" executions corpus hangs
for t in "${targets[@]}"; do
  execs=$(cat "$work/$t".*.log | sed -n 's/^stat::number_of_executed_units: *//p' | awk '{n += $1} END {print n + 0}')
  secs=$(cat "$work/$t.seconds" 2>/dev/null || echo "$seconds")
  printf '%-20s %8s %12s %14s %8s %6s\n' "$t" "$secs" "$((execs / (secs > 0 ? secs : 1)))" "$execs" \
    "$(ls "$work/$t.new" | wc -l)+$(ls "tests/fuzz/corpus/$t" | wc -l)" "$(ls "$work/$t.hang" | wc -l)"
done
for t in "${targets[@]}"; do
  for h in "$work/$t.hang"/*; do
    [ -f "$h" ] || continue
    echo "ci_fuzz: fuzz_$t: $(basename "$h") ($(stat -c %s "$h") bytes) fails inside HDF5 (a hang or a memory error of HDF5's own): known," \
      "not a failure (tests/fuzz/known_hangs/README.md)"
  done
done

status=0
for t in "${failed[@]}"; do
  status=1
  echo "ci_fuzz: fuzz_$t FAILED; the end of its log:"
  tail -60 "$(ls -t "$work/$t".*.log | head -1)"
  for a in "$work/$t.crash"/*; do
    [ -f "$a" ] || continue
    dest="tests/fuzz/corpus/$t/regression-$(basename "$a")"
    cp "$a" "$dest"
    echo "ci_fuzz: the input is now $dest (reproduce: $bin/fuzz_$t $dest); base64:"
    base64 -w 0 "$a"
    echo
  done
done
exit $status
