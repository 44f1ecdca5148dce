#!/usr/bin/env bash
# Fails when a file of the tree differs from its formatter's layout: the C++ and CUDA from
# clang-format's with the project's .clang-format (Debian 12's clang-format 14), the Python
# (*.py and the scripts whose first line names python) from ruff format's with ruff.toml (the
# ruff python/requirements-format.txt pins). scripts/setup_format.sh installs both when missing.
# `--fix` rewrites the files instead. Test fixtures under tests/data and the fuzz corpora are left
# as they are. Also refuses a Catch2 test name holding ";" (CTest would split it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_format.sh
ruff=.venv-format/bin/ruff
fixtures=(-e '^tests/data/' -e '^tests/fuzz/corpus/')
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | grep -v "${fixtures[@]}")
python_scripts() {  # tracked files without .py whose first line runs python (scripts/make_models)
  git grep -lI -e '^#!.*python' -- ':!*.py' | while read -r f; do head -n 1 "$f" | grep -q python && echo "$f"; done
}
mapfile -t python < <({ git ls-files '*.py'; python_scripts; } | sort -u | grep -v "${fixtures[@]}")
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  "$ruff" format --quiet "${python[@]}"
  exit 0
fi
status=0
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/check_format.$$; then
  grep -m 20 'error:' /tmp/check_format.$$ || true
  echo "check_format: files above differ from clang-format's layout; run scripts/check_format.sh --fix" >&2
  status=1
fi
if ! "$ruff" format --check --quiet --output-format concise "${python[@]}" >/tmp/check_format.$$ 2>&1; then
  grep -m 20 . /tmp/check_format.$$ || true
  echo "check_format: Python files above differ from ruff format's layout; run scripts/check_format.sh --fix" >&2
  status=1
fi
rm -f /tmp/check_format.$$
# CTest's catch_discover_tests cuts a test name at ';' and then runs halves that match nothing
if ! python3 - "${files[@]}" <<'PY'; then
import re, sys
bad = 0
for path in sys.argv[1:]:
    text = open(path, encoding="utf-8", errors="replace").read()
    for m in re.finditer(r'\b(?:TEST_CASE|SCENARIO)\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', text):
        name = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
        if ";" in name:
            print(f"{path}: test name with ';': {name[:80]}")
            bad = 1
sys.exit(bad)
PY
  echo "check_format: test names above hold ';', which CTest splits; use ',' or 'and'" >&2
  status=1
fi
[ "$status" -eq 0 ] || exit 1
echo "check_format: ${#files[@]} C++/CUDA files as clang-format lays them out, ${#python[@]} Python files as" \
  "ruff $("$ruff" --version | cut -d' ' -f2) does"
