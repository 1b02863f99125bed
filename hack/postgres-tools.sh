#!/usr/bin/env bash
# Installs Debian's PostgreSQL server if missing. The Postgres driver tests
# (internal/dev/pgtest) run initdb, pg_ctl and pg_basebackup from
# `pg_config --bindir` to start a primary and hot standbys on loopback.
set -euo pipefail
have() {
  command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ] && [ -x "$(pg_config --bindir)/pg_basebackup" ]
}
if have; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
install() {
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql-15 >/dev/null
}
echo "installing Debian's postgresql-15 package"
# The lists are refreshed only when the package cannot be found or installed.
if ! apt-cache show postgresql-15 >/dev/null 2>&1 || ! install; then
  $SUDO apt-get update -qq
  install
fi
# The package's own cluster is not needed: the tests start their own.
$SUDO pg_ctlcluster 15 main stop >/dev/null 2>&1 || true
have
