#!/usr/bin/env bash
# Installs, builds, and runs the demo: the bundled model under two contrasting configurations
# (fp32 batch 1 vs bf16 batch 8 with shape-heuristic GEMMs), traced, diffed, report printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/driftscope demo --out build/demo --force "$@"  # the demo folder is the script's own
