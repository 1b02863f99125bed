#!/usr/bin/env bash
# Installs PGlite with pgvector and its socket server from the npm registry
# into bin/pglite (project-local, no global install). The Postgres driver's
# filtered vector search test runs bin/pglite/node_modules/.bin/pglite-server:
# Debian 12 has no pgvector package for the machine's PostgreSQL 15.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=bin/pglite
want=hack/tools/pglite/package.json
if [ -x "$dest/node_modules/.bin/pglite-server" ] && cmp -s "$want" "$dest/package.json"; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "installing Debian's nodejs and npm packages"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
echo "installing PGlite, pgvector and pglite-socket into $dest"
mkdir -p "$dest"
cp "$want" "$dest/package.json"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error >/dev/null
test -x "$dest/node_modules/.bin/pglite-server"
