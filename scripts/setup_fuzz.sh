#!/usr/bin/env bash
# Installs what the sanitizer and fuzzing build needs (when missing): clang with its libFuzzer and
# sanitizer runtimes, llvm-symbolizer for readable reports, lld for faster links (docs/fuzzing.md).
set -euo pipefail
packages=(clang libclang-rt-14-dev llvm lld)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup_fuzz: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
