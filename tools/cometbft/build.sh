#!/usr/bin/env bash
# Builds CometBFT (github.com/cometbft/cometbft/cmd/cometbft, the version pinned in go.mod
# and go.sum) into a cache outside the repository, keyed by the hash of go.mod and go.sum.
# Prints the directory holding the `cometbft` binary; a warm run builds nothing.
# GRIDWEAVE_COMETBFT_CACHE moves the cache root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
key=$(sha256sum "$here/go.sum" "$here/go.mod" | sha256sum | cut -c1-16)
cache_root=${GRIDWEAVE_COMETBFT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/cometbft}
out="$cache_root/$key"
if [ -x "$out/cometbft" ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "build.sh: go is not on PATH" >&2; exit 127; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
echo "building cometbft into $out (first run only)..." >&2
go build -trimpath -ldflags="-s -w" -o "$out.tmp/cometbft" github.com/cometbft/cometbft/cmd/cometbft >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
