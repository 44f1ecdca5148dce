# Shell functions shared by scripts/ci_fuzz.sh (deterministic CI fuzzing) and
# scripts/fuzz_explore.sh (long runs from random seeds beside CI): the target list, each target's
# libFuzzer options, the classifier that tells a fault of driftscope from a fault inside HDF5, and
# the loop that runs one target until its budget is spent (docs/fuzzing.md). Sourced from the
# repository root after scripts/sanitizer_env.sh; needs bash >= 5.1 (wait -n -p).

FUZZ_BIN=${FUZZ_BIN:-build-asan/tests/fuzz}
# Fuzz runs and replays run with address-space randomisation off where the system allows it
# (setarch -R; a container's seccomp profile may not): with a fixed seed, pointer values that
# reach libFuzzer's comparison hooks would otherwise vary the inputs it makes from run to run.
FUZZ_WRAP=()
if setarch "$(uname -m)" -R true 2>/dev/null; then FUZZ_WRAP=(setarch "$(uname -m)" -R); fi
# The loaders' memory check reads MemAvailable, which differs from moment to moment and between
# machines (and with it the fuzzer's path and the verdict on a large config): fuzz runs see a
# fixed 4 GiB, the -rss_limit_mb below (src/model/memory.h's test hook).
export DRIFTSCOPE_MEM_AVAILABLE=${DRIFTSCOPE_MEM_AVAILABLE:-4294967296}

# Every target: the files that define LLVMFuzzerTestOneInput (fuzz_target.cpp is their shared
# harness), in name order.
fuzz_all_targets() {
  local f
  for f in $(grep -l LLVMFuzzerTestOneInput tests/fuzz/fuzz_*.cpp | sort); do
    f=${f##*/fuzz_}
    echo "${f%.cpp}"
  done
}

# Exits with a message unless every TARGET is a target whose libFuzzer binary is built.
fuzz_check_targets() {  # TARGET...
  local t all
  all=" $(fuzz_all_targets | tr '\n' ' ')"
  for t in "$@"; do
    [[ $all == *" $t "* ]] || { echo "fuzz: no target '$t' (targets:$all)" >&2; exit 2; }
    [ -x "$FUZZ_BIN/fuzz_$t" ] || {
      echo "fuzz: $FUZZ_BIN/fuzz_$t is missing (scripts/ci_sanitize.sh builds it)" >&2
      exit 2
    }
  done
}

# The libFuzzer options of TARGET shared by fuzzing and by the replay of one input, into the array
# FUZZ_OPTS. The per-input timeout is 25 s, 5 s for trace_reader (its inputs take milliseconds; an
# HDF5 hang would otherwise eat its time); an allocation over 4 GiB is an out-of-memory.
fuzz_options() {  # TARGET
  local timeout=25
  [ "$1" = trace_reader ] && timeout=5
  FUZZ_OPTS=(-timeout="$timeout" -rss_limit_mb=4096)
  case $1 in
    safetensors | hf_config | tokenizer_json | prompts) FUZZ_OPTS+=(-dict=tests/fuzz/dict/json.dict) ;;
    run_config_toml) FUZZ_OPTS+=(-dict=tests/fuzz/dict/toml.dict) ;;
  esac
}

# The command that replays one input as the fuzz run saw it (for messages: copy and paste).
fuzz_repro_command() {  # TARGET INPUT
  fuzz_options "$1"
  echo "source scripts/sanitizer_env.sh && $FUZZ_BIN/fuzz_$1 ${FUZZ_OPTS[*]} $2"
}

# ---------------------------------------------------------------------------------------------
# The classifier. fuzz_classify LOG prints one line "OWNER KIND FRAME":
#   OWNER  none (no fault in LOG), hdf5 (a fault of HDF5's own: known, tests/fuzz/known_hangs/),
#          ours (anything else: a driftscope bug until shown otherwise)
#   KIND   timeout, oom, oom-rss, leak, the AddressSanitizer report (heap-buffer-overflow, SEGV,
#          ...), ubsan, exception / property (the harness's own aborts), crash (other signals)
#   FRAME  the frame that decided: the first frame of the faulting stack that is not libFuzzer,
#          the sanitizer runtime (its interceptors are named as the libc functions they replace:
#          memcpy, strdup, ...), operator new/delete, libc, libstdc++, libgcc or zlib; "-" if none.
#          An unnamed HDF5 function (Debian's libhdf5 has no symbols for its static functions) is
#          named libhdf5+OFFSET.CALLER. An HDF5 timeout is named by the outermost HDF5 frame (the
#          call that never returned, e.g. H5Aread): where the loop was stopped varies.
# It reads only the first report of the log (its header line, e.g. "ERROR: AddressSanitizer:",
# and the first block of "#N 0x..." frames under it), so lines printed before it (HDF5's own
# "#000:" error stacks, libFuzzer's "#1234 NEW" status lines) and the sections after it (the
# "allocated by" stack, a second report) cannot decide. The frame belongs to HDF5 when it is in
# libhdf5 (the "in FUNC (libhdf5_serial.so.103+0x...)" form llvm-symbolizer prints for Debian's
# libhdf5, which has no debug info) or, with debug info, when the function is H5* or its source
# is H5*.c ("in H5HG_read /path/H5HG.c:123"). An AddressSanitizer memory error whose memory was
# allocated by driftscope (the "allocated by thread" stack, or a stack frame of ours) is ours even
# when HDF5 made the access: HDF5 was handed a buffer too small.
fuzz_classify() {  # LOG
  awk '
    # the function of a frame line ("" when unsymbolized: "#1 0x7f.. (/lib/libhdf5...so+0x..)")
    function fn(l,   f) {
      if (!match(l, /^ *#[0-9]+ 0x[0-9a-f]+ in [^ ]+/)) return ""
      f = substr(l, RSTART, RLENGTH); sub(/.* in /, "", f); sub(/\(.*/, "", f)
      return f
    }
    # libFuzzer, the sanitizer runtime and its interceptors, operator new/delete, glibc (as a
    # module, or as a source path when libc6-dbg is installed: "in __memmove_avx_unaligned_erms
    # ./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:317"), libstdc++.so,
    # libgcc_s and the compression libraries HDF5 calls: the caller below them decides.
    function runtime(l,   f) {
      f = fn(l)
      if (l ~ /fuzzer::|__Fuzzer|sanitizer|__asan|__lsan|__ubsan|__interceptor_|__interception|compiler-rt\/lib|libclang_rt/) return 1
      if (l ~ /\/libc\.so|\/libc-[0-9.]*\.so|\/libm\.so|\/libpthread|\/ld-linux|\/libstdc\+\+\.so|\/libgcc_s|\/libz\.so|\/libsz\.so|\/libaec\.so/) return 1
      if (l ~ / (\.\/)?(\.\.\/)*(sysdeps|csu|nptl|stdlib|string|signal|libio|malloc|misc|posix|elf|wcsmbs|stdio-common)\/[^ ]*:[0-9]/) return 1
      if (f ~ /^__(GI_|libc_|pthread_|mem|str|stp|wmem|wcs|restore_rt)/) return 1
      if (f ~ /^(malloc|calloc|realloc|reallocarray|free|posix_memalign|memalign|aligned_alloc|valloc|pvalloc|strdup|strndup|strlen|strnlen|strcpy|strncpy|strcat|strncat|strcmp|strncmp|strcasecmp|strncasecmp|strchr|strrchr|strstr|strspn|strcspn|strpbrk|strtol|strtoll|strtoul|strtoull|atoi|atol|memcpy|memmove|memset|memcmp|memchr|memrchr|bcmp|fread|fwrite|read|write|pread|pwrite|printf|fprintf|snprintf|vsnprintf|sprintf|vsprintf|abort|raise|main|_start|start_thread|clone|clone3)$/) return 1
      if (l ~ / in operator (new|delete)/) return 1
      return 0
    }
    function hdf5(l) {
      return l ~ /libhdf5/ || fn(l) ~ /^H5[A-Za-z0-9_]*$/ || l ~ /\/H5[A-Za-z0-9_]*\.c(:| |$)/
    }
    function module(l,   m) {
      if (!match(l, /\([^ ()]*\+0x[0-9a-f]+\)/)) return "?"
      m = substr(l, RSTART + 1, RLENGTH - 2); sub(/.*\//, "", m)
      return m
    }
    # the first report: its kind
    kind == "" {
      if (/ERROR: libFuzzer: timeout/) kind = "timeout"
      else if (/ERROR: libFuzzer: out-of-memory \(malloc/) kind = "oom"
      else if (/ERROR: libFuzzer: out-of-memory/) kind = "oom-rss"
      else if (/ERROR: LeakSanitizer/) kind = "leak"
      else if (/ERROR: AddressSanitizer: /) {
        kind = $0; sub(/.*ERROR: AddressSanitizer: /, "", kind); sub(/[ :].*/, "", kind)
        if (kind == "requested") kind = "allocation-size-too-big"
        asan = 1
      }
      else if (/: runtime error: |ERROR: UndefinedBehaviorSanitizer/) kind = "ubsan"
      else if (/^fuzz: an exception other than ds::Error/) { kind = "exception"; forced = 1 }
      else if (/^fuzz: property violated/) { kind = "property"; forced = 1 }
      else if (/^terminate called/) { kind = "terminate"; forced = 1 }
      else if (/ERROR: libFuzzer: fuzz target exited/) { kind = "exit"; forced = 1 }
      else if (/ERROR: libFuzzer: /) kind = "crash"
      next
    }
    # the first block of frames under it (the faulting stack), and for a memory error the stack
    # of the memory: "allocated by thread", or the frame owning a stack variable
    /^ *#[0-9]+ 0x[0-9a-f]+/ {
      if (section == "") section = "fault"
      if (section == "fault" && !fault_done) fault[++nf] = $0
      if (section == "memory" && !memory_done) memory[++nm] = $0
      next
    }
    section == "fault" { fault_done = 1 }
    section == "memory" { memory_done = 1 }
    asan && fault_done && nm == 0 && /allocated by thread|is located in stack of thread/ { section = "memory" }
    function first(a, n,   i) { for (i = 1; i <= n; i++) if (!runtime(a[i])) return i; return 0 }
    END {
      if (kind == "") { print "none - -"; exit }
      i = first(fault, nf)
      if (!i) { print "ours", kind, "-"; exit }
      owner = hdf5(fault[i]) ? "hdf5" : "ours"
      # the frame: its function, or for an unnamed HDF5 function (Debian strips the static ones)
      # its module+offset and the first named HDF5 caller
      frame = fn(fault[i])
      # a hang is stopped wherever HDF5 happens to be in its loop: it is named by the HDF5 call
      # that never returned (the outermost HDF5 frame), the same on every run
      if (owner == "hdf5" && kind == "timeout") {
        for (j = i; j < nf && hdf5(fault[j + 1]); j++) ;
        if (fn(fault[j]) != "") frame = fn(fault[j])
      }
      if (frame == "") {
        frame = module(fault[i]); sub(/^libhdf5[^+]*/, "libhdf5", frame)
        for (j = i + 1; j <= nf && hdf5(fault[j]); j++) if (fn(fault[j]) != "") { frame = frame "." fn(fault[j]); break }
      }
      gsub(/[^A-Za-z0-9_.+:-]/, "_", frame)
      if (forced) owner = "ours"
      j = first(memory, nm)
      if (owner == "hdf5" && j && !hdf5(memory[j])) owner = "ours"
      print owner, kind, frame
    }' "$1"
}

# The input libFuzzer wrote for the fault in LOG ("Test unit written to PATH"), or nothing.
fuzz_artifact() {  # LOG
  sed -n 's/.*Test unit written to //p' "$1" | grep -v '/slow-unit-' | head -1
}

# Executions in LOG (libFuzzer's final stats, or its last status line when they are missing).
fuzz_execs() {  # LOG
  local n
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$1" | tail -1)
  [ -n "$n" ] || n=$(sed -n 's/^#\([0-9][0-9]*\)\t.*/\1/p' "$1" | tail -1)
  echo "${n:-0}"
}

# Triage of one fault: classifies the fuzz run's LOG and the log of INPUT replayed alone in a
# fresh process (written to REPLAY_LOG), and prints one line "VERDICT FUZZ_CLASS REPLAY_CLASS"
# (each class as OWNER/KIND/FRAME). VERDICT is hdf5 only when both runs blame HDF5; ours when both
# blame driftscope; disagree when they differ (one input must get one classification: CI fails);
# noinput when libFuzzer wrote no input.
fuzz_triage() {  # TARGET LOG INPUT REPLAY_LOG
  local t=$1 log=$2 input=$3 rlog=$4 a b
  a=$(fuzz_classify "$log" | tr ' ' /)
  if [ -z "$input" ] || [ ! -f "$input" ]; then
    echo "noinput $a -"
    return
  fi
  fuzz_options "$t"
  "${FUZZ_WRAP[@]}" "$FUZZ_BIN/fuzz_$t" "${FUZZ_OPTS[@]}" "$input" >"$rlog" 2>&1 || true
  b=$(fuzz_classify "$rlog" | tr ' ' /)
  if [ "${a%%/*}" = hdf5 ] && [ "${b%%/*}" = hdf5 ]; then
    echo "hdf5 $a $b"
  elif [ "${a%%/*}" = ours ] && [ "${b%%/*}" = ours ]; then
    echo "ours $a $b"
  else
    echo "disagree $a $b"
  fi
}

# fuzz_loop TARGET DIR: fuzzes TARGET until its budget is spent, resuming after every fault of
# HDF5's own, and writes what happened under DIR:
#   run.K.log        libFuzzer's whole log of run K (K = 1, 2, ...), replay.K.log the replay's,
#   cmd.K            the command of run K
#   out.K/           the inputs run K added to the corpus (each run starts from an empty one)
#   seeds.K          the inputs it started from: the committed corpus, then out.1 .. out.K-1
#   faults           one line per fault: "K VERDICT FUZZ_CLASS REPLAY_CLASS INPUT SEED"
#   execs, seconds   totals
# Budget and seeds, from the environment:
#   FUZZ_RUNS=N      N executions in all (runs after a fault get what is left): deterministic;
#   FUZZ_SECONDS=S   or S seconds of wall time in all
#   FUZZ_SEED=S      run K uses seed S+K-1, and -use_cmp=0 (below); unset: a random seed per
#                    run (printed)
#   FUZZ_KEEP_GOING  set: go on after a driftscope fault too (exploration); unset: stop there
#   FUZZ_MAX_RESUMES with FUZZ_RUNS, at most this many runs (default 100): a target whose every
#                    run ends on an HDF5 fault at once stops there instead of looping
# Returns 1 when a fault that is not HDF5's stopped it (CI's failure), else 0.
fuzz_loop() {  # TARGET DIR
  local t=$1 dir=$2 k=0 start left seed rc log input tri execs total=0 bad=() f s seeds cmd
  mkdir -p "$dir"
  : >"$dir/faults"
  fuzz_options "$t"
  start=$(date +%s)
  while :; do
    if [ -n "${FUZZ_RUNS:-}" ]; then
      left=$((FUZZ_RUNS - total))
    else
      left=$((FUZZ_SECONDS - ($(date +%s) - start)))
    fi
    [ "$left" -gt 0 ] || break
    if [ -n "${FUZZ_RUNS:-}" ] && [ "$k" -ge "${FUZZ_MAX_RESUMES:-100}" ]; then
      echo "fuzz: $t: stopped after $k runs, each ended by a fault inside HDF5 (FUZZ_MAX_RESUMES);" \
        "$left runs left unused"
      break
    fi
    k=$((k + 1))
    if [ -n "${FUZZ_SEED:-}" ]; then
      seed=$((FUZZ_SEED + k - 1))
    else
      seed=$(($(od -An -N4 -tu4 /dev/urandom) % 2147483646 + 1))
    fi
    # The corpus as a list in a fixed order (libFuzzer reads a directory in the file system's
    # order, which differs between machines); inputs that faulted before are left out.
    for f in $(find "tests/fuzz/corpus/$t" -type f | LC_ALL=C sort) \
      $(find "$dir" -path "$dir/out.*" -type f 2>/dev/null | LC_ALL=C sort); do
      s=$(sha1sum <"$f" | cut -c1-40)
      [[ " ${bad[*]} " == *" $s "* ]] || printf '%s\n' "$f"
    done | paste -sd, >"$dir/seeds.$k"
    seeds=()
    [ -s "$dir/seeds.$k" ] && seeds=(-seed_inputs=@"$dir/seeds.$k")
    mkdir -p "$dir/out.$k" "$dir/art.$k"
    log=$dir/run.$k.log
    echo "fuzz: $t run $k: seed $seed, $([ -n "${FUZZ_RUNS:-}" ] && echo "$left runs" || echo "$left s")"
    # With a fixed seed, no mutations from the values of the last comparisons (-use_cmp=0): they
    # include stack addresses (they move with the environment's size), the process id in the
    # scratch path, and other values that differ from run to run and machine to machine.
    cmd=("${FUZZ_WRAP[@]}" "$FUZZ_BIN/fuzz_$t" "${FUZZ_OPTS[@]}" -seed="$seed" -reload=0
      $([ -n "${FUZZ_SEED:-}" ] && echo -use_cmp=0)
      -print_final_stats=1 "$([ -n "${FUZZ_RUNS:-}" ] && echo "-runs=$left" || echo "-max_total_time=$left")"
      -artifact_prefix="$dir/art.$k/" "${seeds[@]}" "$dir/out.$k")
    echo "${cmd[*]}" >"$dir/cmd.$k"
    rc=0
    "${cmd[@]}" >"$log" 2>&1 || rc=$?
    execs=$(fuzz_execs "$log")
    total=$((total + execs))
    [ "$rc" -eq 0 ] && continue
    input=$(fuzz_artifact "$log")
    tri=$(fuzz_triage "$t" "$log" "$input" "$dir/replay.$k.log")
    echo "$k $tri ${input:--} $seed" >>"$dir/faults"
    echo "fuzz: $t run $k: ${tri%% *} fault (fuzz run: $(echo "$tri" | cut -d' ' -f2)," \
      "replay: $(echo "$tri" | cut -d' ' -f3)) after $execs executions"
    [ -n "$input" ] && bad+=("$(sha1sum <"$input" | cut -c1-40)")
    # a run that stopped before executing anything must not loop forever on a run budget
    [ "$execs" -gt 0 ] || total=$((total + 1))
    if [ "${tri%% *}" != hdf5 ] && [ -z "${FUZZ_KEEP_GOING:-}" ]; then
      echo "$total" >"$dir/execs"
      echo $(($(date +%s) - start)) >"$dir/seconds"
      return 1
    fi
  done
  echo "$total" >"$dir/execs"
  echo $(($(date +%s) - start)) >"$dir/seconds"
  return 0
}

# Inputs a target added to the corpus in DIR (distinct; the runs after a fault start from them).
fuzz_new_inputs() {  # DIR
  find "$1" -path "$1/out.*" -type f -printf '%f\n' 2>/dev/null | sort -u | wc -l
}

# Runs FUNC TARGET for every TARGET, JOBS at a time; the targets whose FUNC failed are left in
# the array FUZZ_FAILED.
fuzz_pool() {  # JOBS FUNC TARGET...
  local jobs=$1 func=$2 t done_pid
  shift 2
  FUZZ_FAILED=()
  declare -A names=()
  for t in "$@"; do
    if [ ${#names[@]} -ge "$jobs" ]; then
      wait -n -p done_pid "${!names[@]}" || FUZZ_FAILED+=("${names[$done_pid]}")
      unset "names[$done_pid]"
    fi
    "$func" "$t" &
    names[$!]=$t
  done
  while [ ${#names[@]} -gt 0 ]; do
    wait -n -p done_pid "${!names[@]}" || FUZZ_FAILED+=("${names[$done_pid]}")
    unset "names[$done_pid]"
  done
}

# The classifier on hand-made logs, one per form it must read (ci_fuzz.sh runs this first; also
# `bash -c 'source scripts/fuzz_lib.sh; fuzz_classify_selftest'`). Prints each case; returns 1
# when one is classified wrongly.
fuzz_classify_selftest() {
  local dir bad=0 want got name
  dir=$(mktemp -d /tmp/fuzz-classify.XXXXXX)
  local F='    #0 0x5555 in __sanitizer_print_stack_trace (/b/fuzz_trace_reader+0x1cb2b1) (BuildId: fc32)
    #1 0x5556 in fuzzer::PrintStackTrace() crtstuff.c'
  local H='(/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x167b32) (BuildId: e923)'
  local D='in ds::h5::read_attr_string(long, std::__cxx11::basic_string<char> const&) /w/trace/h5.cpp:184:5'
  local T='    #9 0x5557 in LLVMFuzzerTestOneInput /w/tests/fuzz/fuzz_trace_reader.cpp:24:10
    #10 0x5558 in fuzzer::Fuzzer::ExecuteCallback(unsigned char const*, unsigned long) crtstuff.c
    #11 0x7f01 in __libc_start_call_main csu/../sysdeps/nptl/libc_start_call_main.h:58:16'
  local A='==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020 at pc 0x55 bp 0x7f sp 0x7f
READ of size 64 at 0x6020 thread T0'
  cases() {
    # a driftscope frame on top of an interceptor: ours
    case_ ours "$A
    #0 0x5555 in __interceptor_memcpy (/b/fuzz_trace_reader+0x1585d3) (BuildId: fc32)
    #1 0x5556 $D
$T"
    # HDF5 under AddressSanitizer's memcpy, Debian's module+offset form: HDF5's
    case_ hdf5 "$A
    #0 0x5555 in __interceptor_memcpy (/b/fuzz_trace_reader+0x1585d3) (BuildId: fc32)
    #1 0x7f02 in H5HG_read $H
    #2 0x7f03 in H5T__conv_vlen $H
    #3 0x7f04 in H5Aread $H
    #4 0x5556 $D
$T
0x6020 is located 0 bytes to the right of 80-byte region [0x6020,0x6070)
allocated by thread T0 here:
    #0 0x5555 in malloc (/b/fuzz_trace_reader+0x1c11ce) (BuildId: fc32)
    #1 0x7f05  $H
    #2 0x7f06 in H5FL_blk_malloc $H"
    # the same with a libhdf5 that has debug info ("in FUNC /path/file.c:line"), memcpy named as libc's
    case_ hdf5 "$A
    #0 0x5555 in memcpy (/b/fuzz_trace_reader+0x1585d3)
    #1 0x7f02 in H5HG_read /build/hdf5-1.10.8/src/H5HG.c:601:5
    #2 0x7f04 in H5Aread /build/hdf5-1.10.8/src/H5A.c:702:8
    #3 0x5556 $D"
    # a SEGV inside glibc's memmove as libc6-dbg symbolizes it (no module), under the interceptor
    case_ hdf5 "==1==ERROR: AddressSanitizer: SEGV on unknown address 0x7f0000001000 (pc 0x7f bp 0x7f sp 0x7f T0)
==1==The signal is caused by a READ memory access.
    #0 0x7f01 in __memmove_avx_unaligned_erms ./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:317
    #1 0x5555 in __interceptor_memcpy (/b/fuzz_trace_reader+0x1585d3) (BuildId: fc32)
    #2 0x7f02 in H5HG_read $H
    #3 0x5556 $D"
    # a libFuzzer timeout taken inside glibc (signal frame, memmove), HDF5 below
    case_ hdf5 "ALARM: working on the last Unit for 5 seconds
==1== ERROR: libFuzzer: timeout after 5 seconds
$F
    #2 0x5556 in fuzzer::Fuzzer::AlarmCallback() crtstuff.c
    #3 0x7f01  (/lib/x86_64-linux-gnu/libc.so.6+0x3c04f) (BuildId: 93ac)
    #4 0x7f01 in __memmove_avx_unaligned_erms ./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:317
    #5 0x7f02  $H
    #6 0x7f02 in H5C_protect $H
    #7 0x5556 $D
$T"
    # a timeout in driftscope code: ours
    case_ ours "==1== ERROR: libFuzzer: timeout after 25 seconds
$F
    #2 0x5556 in fuzzer::Fuzzer::AlarmCallback() crtstuff.c
    #3 0x7f01  (/lib/x86_64-linux-gnu/libc.so.6+0x3c04f) (BuildId: 93ac)
    #4 0x5556 in ds::Tokenizer::encode(std::string_view) const /w/src/tokenizer/bpe.cpp:77:3
$T"
    # HDF5 writing past a driftscope stack buffer: the memory is ours
    case_ ours "==1==ERROR: AddressSanitizer: stack-buffer-overflow on address 0x7ffd at pc 0x55 bp 0x7f sp 0x7f
WRITE of size 16 at 0x7ffd thread T0
    #0 0x5555 in __interceptor_memcpy (/b/fuzz_trace_reader+0x1585d3) (BuildId: fc32)
    #1 0x7f02 in H5T_convert $H
    #2 0x7f04 in H5Aread $H
    #3 0x5556 in ds::h5::read_attr_i64(long, std::string const&) /w/trace/h5.cpp:200:5
Address 0x7ffd is located in stack of thread T0 at offset 40 in frame
    #0 0x5556 in ds::h5::read_attr_i64(long, std::string const&) /w/trace/h5.cpp:195"
    # lines before the report cannot decide: HDF5's error stack, libFuzzer's status lines
    case_ ours "HDF5-DIAG: Error detected in HDF5 (1.10.8) thread 0:
  #000: H5A.c line 528 in H5Aopen(): unable to load attribute info from object header
    #0 0x7f02 in H5Aopen $H
#1024	NEW    cov: 3121 ft: 9000 corp: 80/1Mb lim: 4096 exec/s: 12 rss: 300Mb L: 33/36 MS: 2 ChangeBit-CopyPart-
fuzz: property violated: token id inside the vocabulary
==1== ERROR: libFuzzer: deadly signal
$F
    #2 0x5556 in fuzzer::Fuzzer::CrashCallback() crtstuff.c
    #3 0x7f01 in __pthread_kill_implementation ./nptl/pthread_kill.c:44:76
    #4 0x7f01 in raise ./signal/../sysdeps/posix/raise.c:26:13
    #5 0x7f01 in abort ./stdlib/abort.c:79:7
    #6 0x5556 in ds::fuzz::require(bool, char const*) /w/tests/fuzz/fuzz_target.cpp:72:3
$T"
    # an allocation over the limit made by HDF5, and one made by driftscope
    case_ hdf5 "==1== ERROR: libFuzzer: out-of-memory (malloc(8589934592))
$F
    #2 0x5556 in fuzzer::MallocHook(void const volatile*, unsigned long) crtstuff.c
    #3 0x5557 in __sanitizer::RunMallocHooks(void*, unsigned long) (/b/fuzz_trace_reader+0x1)
    #4 0x5557 in __asan::Allocator::Allocate(unsigned long, unsigned long, __sanitizer::BufferedStackTrace*, __asan::AllocType, bool) (/b/fuzz_trace_reader+0x2)
    #5 0x5555 in malloc (/b/fuzz_trace_reader+0x1c11ce) (BuildId: fc32)
    #6 0x7f02 in H5FL_blk_malloc $H
    #7 0x5556 $D"
    case_ ours "==1== ERROR: libFuzzer: out-of-memory (malloc(8589934592))
$F
    #5 0x5555 in operator new(unsigned long) (/b/fuzz_trace_reader+0x1c11ce) (BuildId: fc32)
    #6 0x5556 in std::vector<float>::reserve(unsigned long) /usr/include/c++/12/bits/vector.tcc:72:20
    #7 0x5556 in ds::load_safetensors(std::string const&) /w/src/model/safetensors.cpp:90:3"
    case_ ours "==1== ERROR: libFuzzer: out-of-memory (used: 4100Mb; exceeds: 4096Mb)"
    # a leak HDF5 has nothing to do with; a run without a fault
    case_ ours "==1==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 24 byte(s) in 1 object(s) allocated from:
    #0 0x5555 in operator new(unsigned long) (/b/fuzz_x+0x1) (BuildId: fc32)
    #1 0x5556 in ds::Tokenizer::load(std::string const&) /w/src/tokenizer/tokenizer.cpp:30:3"
    case_ none "INFO: Seed: 1
#1	INITED cov: 3 ft: 3 corp: 1/1b exec/s: 0 rss: 30Mb
Done 1000 runs in 3 second(s)"
  }
  case_() {
    name=$((${name:-0} + 1))
    printf '%s\n' "$2" >"$dir/$name.log"
    got=$(fuzz_classify "$dir/$name.log")
    if [ "${got%% *}" = "$1" ]; then
      echo "classifier case $name: $got (ok)"
    else
      echo "classifier case $name: $got, expected $1 (WRONG)"
      bad=1
    fi
  }
  cases
  rm -rf "$dir"
  return $bad
}
