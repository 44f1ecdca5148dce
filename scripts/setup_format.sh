#!/usr/bin/env bash
# Installs the two formatters scripts/check_format.sh runs, when missing: Debian 12's clang-format
# (the C++ and CUDA) and ruff at the version python/requirements-format.txt pins (the Python), in
# its own small virtual environment, .venv-format (a 12 MB wheel, no other package; re-installed
# only when the pin changes). Idempotent; a few seconds on a clean machine.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v clang-format >/dev/null || missing+=(clang-format)
dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q "install ok installed" || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup_format: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

pins=python/requirements-format.txt
if ! cmp -s "$pins" .venv-format/requirements.installed 2>/dev/null || [ ! -x .venv-format/bin/ruff ]; then
  rm -rf .venv-format
  /usr/bin/python3 -m venv .venv-format
  # --only-binary: ruff is Rust; its sdist would need a Rust toolchain, which is never fetched
  .venv-format/bin/python -m pip install -q --disable-pip-version-check --only-binary :all: -r "$pins"
  cp "$pins" .venv-format/requirements.installed
fi
