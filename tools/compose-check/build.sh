#!/usr/bin/env bash
# Builds compose-check (the compose-go loader `docker compose config` uses, pinned in
# go.mod/go.sum) into a cache outside the repository keyed by go.mod and go.sum; prints the
# binary's path. A warm run builds nothing. GRIDWEAVE_TOOLS_CACHE moves the cache root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
key=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-16)
out=${GRIDWEAVE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/tools}/compose-check-$key
if [ -x "$out" ]; then
	echo "$out"
	exit 0
fi
command -v go >/dev/null 2>&1 || { echo "build.sh: go is not on PATH" >&2; exit 127; }
mkdir -p "$(dirname "$out")"
cd "$here"
CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags="-s -w" -o "$out.tmp" . >&2
mv -f "$out.tmp" "$out"
echo "$out"
