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
  for f in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp | sed 's/^fuzz_//')"); done
fi
work=$(mktemp -d /tmp/driftscope-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT

fuzz_one() {  # TARGET: one libFuzzer run; its log in $work/TARGET.log
  local t=$1 dict=()
  case $t in
    safetensors | hf_config | tokenizer_json | prompts) dict=(-dict=tests/fuzz/dict/json.dict) ;;
    run_config_toml) dict=(-dict=tests/fuzz/dict/toml.dict) ;;
  esac
  mkdir -p "$work/$t.new" "$work/$t.crash"
  "$bin/fuzz_$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$work/$t.crash/" "${dict[@]}" "$work/$t.new" "tests/fuzz/corpus/$t" \
    >"$work/$t.log" 2>&1
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

printf '%-20s %12s %14s %8s\n' target "execs/s" executions corpus
for t in "${targets[@]}"; do
  stat() { sed -n "s/^stat::$1: *//p" "$work/$t.log" | tail -1; }
  printf '%-20s %12s %14s %8s\n' "$t" "$(stat average_exec_per_sec)" "$(stat number_of_executed_units)" \
    "$(ls "$work/$t.new" | wc -l)+$(ls "tests/fuzz/corpus/$t" | wc -l)"
done

status=0
for t in "${failed[@]}"; do
  status=1
  echo "ci_fuzz: fuzz_$t FAILED; the end of its log:"
  tail -60 "$work/$t.log"
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
