#!/usr/bin/env bash
# Installs Debian's ca-certificates package if missing. make image copies its
# bundle into the images' base and records its version in the SBOM.
set -euo pipefail
bundle=/etc/ssl/certs/ca-certificates.crt
installed() {
  [ -s "$bundle" ] && [ "$(dpkg-query -W -f='${Status}' ca-certificates 2>/dev/null)" = "install ok installed" ]
}
if installed; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
install() {
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq ca-certificates >/dev/null
}
echo "installing Debian's ca-certificates package"
# The package lists are refreshed once, and only when they are missing or
# too old to name a version the mirror still serves.
if ! apt-cache show ca-certificates >/dev/null 2>&1 || ! install; then
  $SUDO apt-get update -qq
  install
fi
installed
