#!/usr/bin/env bash
# Installs, builds, and runs the whole test suite (CTest over the Catch2 tests). Exit code != 0
# when any test fails. GPU tests ([cuda]) skip when no device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests  # the build, plus chromium, the Python venv and Slurm for the tests
ctest --test-dir build --output-on-failure -j"$(nproc)"
