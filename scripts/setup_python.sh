#!/usr/bin/env bash
# Makes the two virtual environments of the Python parts (the driftscope-trace package in
# python/, and the transformers / tokenizers reference tests in tests/engines), each with the
# package installed from python/ (pip install --no-deps ./python, console command
# driftscope-trace):
#   .venv          Debian's python3-torch 1.13, numpy and h5py through --system-site-packages,
#                  transformers 4.46.3 from the pinned python/requirements.txt
#   .venv-current  torch 2.15 and transformers 5.x from PyPI, python/requirements-current.txt
#                  (torch's CUDA libraries from the machine's CUDA 13 toolkit where it has them),
#                  and llama-cpp-python (python/requirements-llamacpp.txt, compiled from its sdist)
# Idempotent: installs missing Debian packages, makes each venv once, re-installs requirements
# only when their file changed and the package only when python/ changed. The CTest tests find
# the venvs at .venv/bin/python and .venv-current/bin/python.
set -euo pipefail
cd "$(dirname "$0")/.."

# libopenblas0-openmp: Debian's torch calls the system BLAS, by default the reference one, about 20
# times slower on the engines tests' matmuls (scripts/make_models refuses it; docs/models.md).
packages=(python3 python3-venv python3-pip python3-torch python3-numpy python3-h5py python3-yaml python3-requests
          python3-typing-extensions libopenblas0-openmp)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup_python: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi


# setuptools (pyproject.toml's build backend) is the venv's own: no download while building.
install_package() {  # VENV: the driftscope-trace package from python/, when its sources changed
  local venv="$1" sum
  sum=$(cat python/pyproject.toml python/driftscope_trace/*.py | sha256sum)
  if [ "$sum" != "$(cat "$venv/package.installed" 2>/dev/null)" ]; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
      --force-reinstall ./python
    rm -rf python/build python/*.egg-info
    echo "$sum" > "$venv/package.installed"
  fi
}

install_requirements() {  # VENV FILE: the pinned requirements, when FILE changed
  local venv="$1" file="$2"
  if ! cmp -s "$file" "$venv/requirements.installed"; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$file"
    cp "$file" "$venv/requirements.installed"
  fi
}

# llama-cpp-python (the llama.cpp recorder's tests, .venv-current) compiles llama.cpp from its
# sdist: a wheel built in the background while the venvs' downloads run, installed at the end.
# -O0 halves the build (461 CPU-s against 776 at the default -O3, 2 cores), and leaving out
# llama.cpp's `common` library (below) halves it again; -O0's numerics differ from an -O3 build's
# only where -O3 contracts multiply-adds into FMA (1e-7 relative), inside the tests' 1e-5
# (docs/engines.md, "llama.cpp"). The sdist's vendor/llama.cpp (the converter and gguf-py) stays
# in .venv-current/llama.cpp for the tests.
llamacpp_file=python/requirements-llamacpp.txt
llamacpp_dir=.venv-current/llama-cpp-python
build_llamacpp() {
  local pin
  pin=$(grep '^llama-cpp-python==' "$llamacpp_file")
  rm -rf "$llamacpp_dir" && mkdir -p "$llamacpp_dir"
  /usr/bin/python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
    "$pin" -d "$llamacpp_dir"
  tar -xzf "$llamacpp_dir"/*.tar.gz -C "$llamacpp_dir"
  local src
  src=$(echo "$llamacpp_dir"/llama_cpp_python-*/)
  # llama.cpp's `common` library is 52 of the 127 objects; the Python package never loads it, but
  # the sdist's CMakeLists forces it on: turned off here (when that line is not found, as is)
  local force='\( *set(LLAMA_BUILD_COMMON\) ON \(CACHE BOOL "Build llama.cpp common library" FORCE)\)'
  sed -i "s/^$force/\\1 OFF \\2/" "$src/CMakeLists.txt"
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DCMAKE_C_FLAGS_RELEASE=-O0 -DCMAKE_CXX_FLAGS_RELEASE=-O0" \
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" /usr/bin/python3 -m pip wheel -q \
    --disable-pip-version-check --no-deps -w "$llamacpp_dir/wheel" "$src"
}
llamacpp_pid=""
if ! cmp -s "$llamacpp_file" .venv-current/llamacpp.installed 2>/dev/null; then
  mkdir -p .venv-current
  llamacpp_start=$(date +%s)
  build_llamacpp > .venv-current/llamacpp-build.log 2>&1 &
  llamacpp_pid=$!
fi

# .venv: Debian's interpreter, not one earlier on PATH: its site-packages hold python3-torch.
[ -x .venv/bin/python ] || /usr/bin/python3 -m venv --system-site-packages .venv
install_requirements .venv python/requirements.txt
install_package .venv
.venv/bin/python -c "import torch, transformers, tokenizers, h5py, numpy, driftscope_trace" \
  || { echo "setup_python: .venv cannot import torch/transformers/tokenizers/h5py/numpy/driftscope_trace" >&2; exit 1; }

# .venv-current: nothing from Debian's site-packages (its torch 1.13 and numpy 1.24 would mix in).
[ -x .venv-current/bin/python ] || /usr/bin/python3 -m venv .venv-current
start=$(date +%s)
install_requirements .venv-current python/requirements-current.txt
if ! .venv-current/bin/python -c "import torch" 2>/dev/null; then
  # no CUDA 13 toolkit with these libraries here: torch's own NVIDIA wheels (2.9 GB)
  echo "setup_python: torch cannot load the machine's CUDA libraries; installing its NVIDIA wheels"
  .venv-current/bin/python -m pip install -q --disable-pip-version-check \
    "$(grep '^torch==' python/requirements-current.txt)"
fi
install_package .venv-current
.venv-current/bin/python -c "import torch, transformers, tokenizers, h5py, numpy, driftscope_trace" \
  || { echo "setup_python: .venv-current cannot import torch/transformers/tokenizers/h5py/numpy/driftscope_trace" >&2; exit 1; }
echo "setup_python: .venv-current ready ($(($(date +%s) - start)) s)"

if [ -n "$llamacpp_pid" ]; then
  wait "$llamacpp_pid" || {
    tail -40 .venv-current/llamacpp-build.log >&2
    echo "setup_python: building llama-cpp-python failed (log: .venv-current/llamacpp-build.log)" >&2
    exit 1
  }
  .venv-current/bin/python -m pip install -q --disable-pip-version-check --no-deps \
    "$llamacpp_dir"/wheel/llama_cpp_python-*.whl -r "$llamacpp_file"
  ln -sfn "$(cd "$llamacpp_dir"/llama_cpp_python-*/vendor/llama.cpp && pwd)" .venv-current/llama.cpp
  rm -rf "$llamacpp_dir"/wheel "$llamacpp_dir"/*.tar.gz
  cp "$llamacpp_file" .venv-current/llamacpp.installed
  echo "setup_python: llama-cpp-python ready ($(($(date +%s) - llamacpp_start)) s)"
fi
.venv-current/bin/python -c "import llama_cpp" \
  || { echo "setup_python: .venv-current cannot import llama_cpp" >&2; exit 1; }
