#!/bin/sh
# Install Debian's headless-capable Chromium for tests/test_site.py's browser checks (CI calls this from .ci/run).
# Quiet on success; apt's own output is shown only when it fails. Needs root (or sudo) and Debian/Ubuntu apt.
set -eu
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "install_browser.sh: could not install chromium" >&2
    exit 1
fi
# Debian's launcher sources /etc/chromium.d/*, whose /dev/shm size test prints a shell error on some hosts: not ours.
chromium --version 2>/dev/null
