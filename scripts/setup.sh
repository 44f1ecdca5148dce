#!/usr/bin/env bash
# Installs the Debian packages driftscope needs (when missing), then configures and builds it in
# build/. CUDA parts are compiled when nvcc is found (/usr/local/cuda or PATH); no GPU is needed.
# With --tests it also sets up what the test suite uses beyond the build: headless chromium
# (HTML report), the Python virtual environment .venv (transformers and tokenizers references),
# and Slurm with munge (the sweep's and zoom's cluster tests); each script is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
with_tests=""
[ "${1:-}" = "--tests" ] && with_tests=1

packages=(g++ cmake make pkg-config libhdf5-dev libcli11-dev catch2 libfmt-dev nlohmann-json3-dev libpcre2-dev libicu-dev libssl-dev libdeflate-dev python3-h5py)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cuda_args=()
if [ -z "${DRIFTSCOPE_NO_CUDA:-}" ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  fi
else
  cuda_args=(-DDRIFTSCOPE_CUDA=OFF)
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" >/dev/null
cmake --build build -j"$(nproc)"

if [ -n "$with_tests" ]; then
  for extra in scripts/setup_browser.sh scripts/setup_python.sh scripts/setup_slurm.sh; do
    if [ -f "$extra" ]; then bash "$extra"; fi
  done
fi
