#!/usr/bin/env bash
# Installs Debian's Slurm (slurm-wlm: slurmctld, slurmd, sbatch, ...) and munge when missing, for
# the real-Slurm tests (tests/cli/test_cli_sweep_slurm.cpp, test_cli_zoom_slurm.cpp). Idempotent,
# non-interactive; starts no service (each test starts its own munged, slurmctld and slurmd from a
# temp dir).
set -euo pipefail

packages=(slurm-wlm munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup_slurm: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
fi
