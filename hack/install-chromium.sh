#!/usr/bin/env bash
# Installs Debian's chromium package if missing. The HTML report test opens
# the report in headless Chromium and checks its screenshot.
set -euo pipefail
if command -v chromium >/dev/null; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
install() {
  # Recommends bring chromium-common's fonts, so the report's text renders.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
}
echo "installing Debian's chromium package"
# The package lists are refreshed once, and only when they are missing or
# too old to name a version the mirror still serves.
if ! apt-cache show chromium >/dev/null 2>&1 || ! install; then
  $SUDO apt-get update -qq
  install
fi
command -v chromium >/dev/null
