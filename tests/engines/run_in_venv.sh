#!/usr/bin/env bash
# Runs one engine test with the Python of the virtual environment scripts/setup_python.sh makes;
# fails (never skips) with a message when that environment is missing or incomplete.
# Usage: run_in_venv.sh VENV_PYTHON SCRIPT ARGS...
set -uo pipefail
py="$1"
shift
if [ ! -x "$py" ] || ! "$py" -c "import torch, transformers, tokenizers, safetensors, h5py, numpy, driftscope_trace" 2>/dev/null; then
  echo "engine test: no usable Python environment at $py (torch, transformers, tokenizers, safetensors, h5py, numpy, driftscope_trace)." >&2
  echo "hint: run scripts/setup_python.sh (it makes .venv and .venv-current from python/requirements*.txt)" >&2
  exit 1
fi
exec "$py" "$@"
