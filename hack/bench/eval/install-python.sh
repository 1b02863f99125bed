#!/usr/bin/env bash
# Installs Debian's python3 if missing: the eval benchmark's baseline is a
# plain Python script, and needs nothing beyond the standard library.
set -euo pipefail
if command -v python3 >/dev/null; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
install() {
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3 >/dev/null
}
echo "installing Debian's python3 package"
# The package lists are refreshed only when they are missing or stale.
if ! apt-cache show python3 >/dev/null 2>&1 || ! install; then
  $SUDO apt-get update -qq
  install
fi
command -v python3 >/dev/null
