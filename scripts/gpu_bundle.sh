#!/usr/bin/env bash
# Packs what a lent GPU machine needs to run driftscope's [cuda] tests and GPU benchmarks without
# building there (that image has CUDA but none of our Debian libraries, and no network): the
# CUDA build's executables plus every shared library they use that is not glibc, libstdc++ or
# CUDA, into .gpu/bundle.tar.xz (ignored by git; carry `.gpu` with the device tool).
# On the device, `bash scripts/gpu_run.sh` unpacks and runs them (docs/cuda.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-cuda
if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "gpu_bundle: needs nvcc at /usr/local/cuda/bin/nvcc" >&2
  exit 2
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
  -DDRIFTSCOPE_TESTS=ON -DDRIFTSCOPE_GPU_TESTS=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target driftscope driftscope_cuda driftscope_cuda_tests \
  bench_gpu_decode bench_gpu_prefill bench_ops bench_cpu_decode bench_trace_host_cost
# the CUDA module sits beside the executable, where it loads it from (docs/architecture.md)
bins=("$build/driftscope" "$build/libdriftscope_cuda.so" "$build/tests/driftscope_cuda_tests"
      "$build/bench/bench_gpu_decode" "$build/bench/bench_gpu_prefill" "$build/bench/bench_ops"
      "$build/bench/bench_cpu_decode" "$build/bench/bench_trace_host_cost")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$build/tests" "$stage/$build/bench" "$stage/lib"
for b in "${bins[@]}"; do
  cp "$b" "$stage/$b"
  strip "$stage/$b"
done
# Shared libraries, except the C runtime and CUDA's own (the device image has those, newer).
ldd "${bins[@]}" | awk '/=> \//{print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|libpthread|librt|libutil|libresolv|libgcc_s|libstdc\+\+)\.so|/usr/local/cuda' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
mkdir -p .gpu
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
tar -C "$stage" -cJf .gpu/bundle.tar.xz .
echo "gpu_bundle: .gpu/bundle.tar.xz ($(du -h .gpu/bundle.tar.xz | cut -f1)); carry .gpu and run: bash scripts/gpu_run.sh"
