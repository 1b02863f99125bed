#!/usr/bin/env bash
# Installs Debian's OpenLDAP server and clients (slapd, ldap-utils) if
# missing. The directory tests (internal/dev/ldaptest) run /usr/sbin/slapd
# with a configuration and database of their own in a temporary directory,
# listening on 127.0.0.1 only. The package's own service listens on port 389
# on every interface: it is kept from starting while the package installs,
# disabled, and stopped if it runs anyway.
set -euo pipefail
packages=(slapd ldap-utils)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done

# The service's pid file names the distro's slapd, never one a test started
# (those write no pid file there).
stop_system_slapd() {
  local pidfile=/run/slapd/slapd.pid pid
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  if [ -n "$pid" ] && $SUDO kill -0 "$pid" 2>/dev/null; then
    echo "stopping the distro's slapd (pid $pid)"
    $SUDO kill "$pid"
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  stop_system_slapd
  exit 0
fi

# invoke-rc.d asks /usr/sbin/policy-rc.d before starting a service; 101
# means "not allowed". A policy already there (containers ship one) is left
# as it is.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi

install() {
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
}
echo "installing Debian's ${missing[*]}"
# The lists are refreshed only when a package cannot be installed.
if ! install; then
  $SUDO apt-get update -qq
  install
fi
# Nor may it start at the next boot.
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now slapd >/dev/null 2>&1 || true
else
  $SUDO update-rc.d slapd disable >/dev/null 2>&1 || true
fi
stop_system_slapd
[ -x /usr/sbin/slapd ] && command -v ldapsearch >/dev/null
