#!/usr/bin/env bash
# Lists the packages whose tests start no server and need no tool from
# bin/: those whose test binary links none of the starters below (each
# starts a server or runs a tool: envtest, PostgreSQL, SpiceDB, OpenFGA, Hydra,
# Gitea, OpenLDAP, helm, the one-node cluster, image builds). `make
# test-unit` runs them; `make test` runs everything.
set -euo pipefail
servers='/internal/dev/(pgtest|spicedbtest|openfgatest|hydratest|testutil/giteatest|testutil/charttest|ldaptest|nodecluster|localcluster|image)$|controller-runtime/pkg/envtest$'
# Packages whose tests run a tool by path rather than through a Go starter.
tools='/internal/report$|/hack/bench/eval$' # Chromium; python3 and a build of the CLI
go list -test -f '{{if .Module}}{{end}}{{.ImportPath}} {{join .Deps " "}}' ./... |
	awk -v re="$servers" -v tools="$tools" '$1 ~ /\.test$/ {
		pkg = substr($1, 1, length($1) - 5); ok = 1
		for (i = 2; i <= NF; i++) if ($i ~ re) { ok = 0; break }
		if (ok && pkg !~ tools) print pkg
	}'
