#!/usr/bin/env bash
# Installs Debian's prometheus package (prometheus + promtool) if missing.
# The tests start their own Prometheus; the package's service is not used.
set -euo pipefail
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "installing Debian's prometheus package (prometheus, promtool)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The package enables a system service; nothing here needs it running.
$SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
command -v promtool >/dev/null
