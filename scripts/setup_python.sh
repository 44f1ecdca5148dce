#!/usr/bin/env bash
# Makes the virtual environment of the Python parts (python/driftscope_trace and the
# transformers / tokenizers reference tests in tests/engines) at .venv: Debian's python3-torch,
# numpy and h5py through --system-site-packages, the pinned python/requirements.txt from PyPI.
# Idempotent: installs missing Debian packages, makes the venv once, re-installs the requirements
# only when python/requirements.txt changed. The CTest tests find the venv at .venv/bin/python.
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

venv=.venv
stamp=$venv/requirements.installed
# Debian's interpreter, not one earlier on PATH: its site-packages hold python3-torch.
if [ ! -x $venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages $venv
fi
if ! cmp -s python/requirements.txt "$stamp"; then
  $venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -r python/requirements.txt
  cp python/requirements.txt "$stamp"
fi
$venv/bin/python -c "import torch, transformers, tokenizers, h5py, numpy" \
  || { echo "setup_python: $venv cannot import torch/transformers/tokenizers/h5py/numpy" >&2; exit 1; }
