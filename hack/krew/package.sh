#!/usr/bin/env bash
# Builds kubectl-ragcanary for this machine into a krew archive and renders
# hack/krew/ragcanary.yaml for it, with the archive's real sha256, so krew
# can install this tree's build:
#
#   hack/krew/package.sh [VERSION]
#   kubectl krew install --manifest=.local/krew/ragcanary.yaml \
#     --archive=.local/krew/kubectl-ragcanary_<os>_<arch>.tar.gz
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
version=${1:-v0.0.0-dev}
os=$(go env GOOS)
arch=$(go env GOARCH)
out="$root/.local/krew"
archive="kubectl-ragcanary_${os}_${arch}.tar.gz"

mkdir -p "$out/stage"
CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags "-s -w" -o "$out/stage/kubectl-ragcanary" "$root/cmd/kubectl-ragcanary"
tar -C "$out/stage" -czf "$out/$archive" kubectl-ragcanary
sha=$(sha256sum "$out/$archive" | cut -d' ' -f1)

# Keep only this platform's entry, and turn its addURIAndSha template into
# the uri and sha256 krew checks the archive against.
awk -v os="$os" -v arch="$arch" -v version="$version" -v sha="$sha" '
  /^  - selector:/ { block = ""; inplatform = 1 }
  inplatform {
    block = block $0 "\n"
    if ($0 ~ "os: " os "$") okos = 1
    if ($0 ~ "arch: " arch "$") okarch = 1
    if ($0 ~ /^    bin: /) {
      if (okos && okarch) printf "%s", block
      block = ""; okos = 0; okarch = 0; inplatform = 0
    }
    next
  }
  { print }
' "$root/hack/krew/ragcanary.yaml" |
  sed -E \
    -e "s|\\{\\{addURIAndSha \"([^\"]*)\" \\.TagName \\}\\}|uri: \\1\\n    sha256: ${sha}|" \
    -e "s|\\{\\{ \\.TagName \\}\\}|${version}|g" \
    -e '/^#/d' >"$out/ragcanary.yaml"

echo "wrote $out/$archive (sha256 $sha) and $out/ragcanary.yaml"
echo "install: kubectl krew install --manifest=$out/ragcanary.yaml --archive=$out/$archive"
