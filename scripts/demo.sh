#!/usr/bin/env bash
# Installs, builds, and runs the demo on the bundled model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo
echo "== driftscope generate (bundled stories260K, greedy, fp32) =="
build/driftscope generate --prompt "Once upon a time" --max-new 80
echo
echo "== the same in fp64 (the oracle) =="
build/driftscope generate --prompt "Once upon a time" --max-new 80 --dtype fp64
