#!/usr/bin/env bash
# Builds the registry clients the tests and the benchmark drive, crane
# (github.com/google/go-containerregistry/cmd/crane) and oras (oras.land/oras/cmd/oras),
# at the versions pinned in go.mod and go.sum, into a cache outside the repository keyed by
# the hash of go.mod and go.sum. Prints the directory holding both binaries; a warm run
# builds nothing. GRIDWEAVE_REGISTRY_CLIENTS_CACHE moves the cache root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
key=$(sha256sum "$here/go.sum" "$here/go.mod" | sha256sum | cut -c1-16)
cache_root=${GRIDWEAVE_REGISTRY_CLIENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/registry-clients}
out="$cache_root/$key"
if [ -x "$out/crane" ] && [ -x "$out/oras" ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "build.sh: go is not on PATH" >&2; exit 127; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
echo "building crane and oras into $out (first run only)..." >&2
build() { go build -trimpath -ldflags="-s -w" -o "$out.tmp/$1" "$2" >&2; }
build crane github.com/google/go-containerregistry/cmd/crane
build oras oras.land/oras/cmd/oras
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
