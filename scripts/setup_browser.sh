#!/usr/bin/env bash
# Installs Debian's chromium (when missing) for the HTML report's browser tests
# (tests/viewer/test_diff_html_browser.cpp renders the demo's report headless). Idempotent.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
echo "setup_browser: installing chromium"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium
