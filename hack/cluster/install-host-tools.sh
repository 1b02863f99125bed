#!/usr/bin/env bash
# Installs what the one-node cluster needs from Debian, if missing: runc (the
# OCI runtime containerd's shim starts), iptables (kube-proxy's and the
# kubelet's rules, inside the node's network namespace) and iproute2 (the
# namespace and its veth pair). Everything else is built from Go modules.
set -euo pipefail
packages=(runc iptables iproute2)
missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
install() {
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
}
echo "installing Debian's ${missing[*]}"
if ! install; then
  $SUDO apt-get update -qq
  install
fi
