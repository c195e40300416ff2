#!/usr/bin/env bash
# Builds the full Kubernetes API server (k8s.io/kubernetes/cmd/kube-apiserver), etcd and
# kubectl from the Go modules pinned in go.mod/go.sum into a cache outside the repository,
# keyed by the hash of go.mod and go.sum. Prints the directory holding the three binaries;
# a warm run builds nothing. GRIDWEAVE_KUBEAPI_CACHE moves the cache root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
# the files' contents only (sha256sum of the files would hash their paths too): every
# checkout of the same pins, wherever it lies, finds the same cache entry
key=$(cat "$here/go.sum" "$here/go.mod" | sha256sum | cut -c1-16)
cache_root=${GRIDWEAVE_KUBEAPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/kubeapi}
out="$cache_root/$key"
binaries=(etcd kube-apiserver kubectl)
complete=1
for name in "${binaries[@]}"; do
  [ -x "$out/$name" ] || complete=0
done
if [ "$complete" = 1 ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "build.sh: go is not on PATH" >&2; exit 127; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
echo "building etcd, kube-apiserver and kubectl into $out (first run only)..." >&2
# Stamp the release into the Kubernetes binaries (`kubectl version`, the apiserver's
# /version), as the upstream build does; a plain `go build` reports v0.0.0-master.
release=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=${release#v1.}
minor=${minor%%.*}
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$release -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  stamp+=" -X $pkg.gitTreeState=clean"
done
build() { go build -trimpath -ldflags="-s -w ${3:-}" -o "$out.tmp/$1" "$2" >&2; }
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$stamp"
build kubectl k8s.io/kubernetes/cmd/kubectl "$stamp"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
