#!/usr/bin/env bash
# Fails when a C++ or CUDA file of the tree differs from what clang-format makes of it with the
# project's .clang-format (Debian 12's clang-format 14, installed if missing). `--fix` rewrites
# the files instead. Test fixtures under tests/data and the fuzz corpora are left as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang-format
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | grep -v -e '^tests/data/' -e '^tests/fuzz/corpus/')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/check_format.$$; then
  grep -m 20 'error:' /tmp/check_format.$$ || true
  rm -f /tmp/check_format.$$
  echo "check_format: files above differ from clang-format's layout; run scripts/check_format.sh --fix" >&2
  exit 1
fi
rm -f /tmp/check_format.$$
echo "check_format: ${#files[@]} files as clang-format lays them out"
