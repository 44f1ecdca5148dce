#!/usr/bin/env bash
# CI: builds everything with clang under AddressSanitizer + UndefinedBehaviorSanitizer, plus the
# libFuzzer targets (-DDRIFTSCOPE_FUZZ=ON: coverage instrumentation, used by scripts/ci_fuzz.sh),
# in build-asan/ without CUDA, then runs the whole test suite there (docs/fuzzing.md). Run after
# scripts/test.sh, whose setup (chromium, the Python venv, Slurm) the suite needs.
# Exit != 0 when a test fails or a sanitizer reports anything.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_fuzz.sh
source scripts/sanitizer_env.sh
start=$(date +%s)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DDRIFTSCOPE_CUDA=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDRIFTSCOPE_GPU_TESTS=OFF \
  -DCMAKE_C_FLAGS=-gline-tables-only -DCMAKE_CXX_FLAGS=-gline-tables-only \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
  -DDRIFTSCOPE_SANITIZE=ON -DDRIFTSCOPE_FUZZ=ON >/dev/null
# only what the test suite and the fuzz runs need (not bench/)
cmake --build build-asan -j"$(nproc)" --target driftscope driftscope_tests fuzz_all
built=$(date +%s)
# not the engine tests (label engines): their time goes to torch, transformers and llama.cpp,
# and the driftscope commands they call (run, diff, show of the bundled models) are the CLI
# tests' commands, which run here; scripts/test.sh runs them once against the Release build
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" -LE engines
echo "ci_sanitize: build $((built - start)) s, tests $(($(date +%s) - built)) s"
