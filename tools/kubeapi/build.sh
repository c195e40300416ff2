#!/usr/bin/env bash
# Builds the Kubernetes API server (apiextensions-apiserver) and etcd from the Go modules
# pinned in go.mod/go.sum into a cache outside the repository, keyed by the go.sum hash.
# Prints the directory holding the two binaries; a warm run builds nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
key=$(sha256sum "$here/go.sum" "$here/go.mod" | sha256sum | cut -c1-16)
cache_root=${GRIDWEAVE_KUBEAPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/kubeapi}
out="$cache_root/$key"
if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "build.sh: go is not on PATH" >&2; exit 127; }
mkdir -p "$out.tmp"
cd "$here"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
echo "building etcd and kube-apiserver into $out (first run only)..." >&2
go build -trimpath -ldflags='-s -w' -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3 >&2
go build -trimpath -ldflags='-s -w' -o "$out.tmp/kube-apiserver" k8s.io/apiextensions-apiserver >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
