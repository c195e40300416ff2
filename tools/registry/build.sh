#!/usr/bin/env bash
# Builds the distribution registry (github.com/distribution/distribution/v3/cmd/registry,
# the version pinned in go.mod and go.sum) into a cache outside the repository, keyed by
# the hash of go.mod and go.sum. Prints the directory holding the `registry` binary; a warm
# run builds nothing. GRIDWEAVE_REGISTRY_CACHE moves the cache root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
key=$(sha256sum "$here/go.sum" "$here/go.mod" | sha256sum | cut -c1-16)
cache_root=${GRIDWEAVE_REGISTRY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/registry}
out="$cache_root/$key"
if [ -x "$out/registry" ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "build.sh: go is not on PATH" >&2; exit 127; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
echo "building the registry into $out (first run only)..." >&2
go build -trimpath -ldflags="-s -w" -o "$out.tmp/registry" \
  github.com/distribution/distribution/v3/cmd/registry >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
