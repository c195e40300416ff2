#!/usr/bin/env bash
# Prints the path of the RayCluster CRD manifest of the KubeRay operator module pinned in
# go.mod (checked against go.sum), downloaded once into Go's module cache outside the
# repository. Usage: crd.sh [rayclusters|rayjobs|rayservices]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kind=${1:-rayclusters}
command -v go >/dev/null 2>&1 || { echo "crd.sh: go is not on PATH" >&2; exit 127; }
cd "$here"
module=github.com/ray-project/kuberay/ray-operator
dir=$(GOFLAGS=-mod=readonly go mod download -json "$module" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
manifest="$dir/config/crd/bases/ray.io_$kind.yaml"
[ -f "$manifest" ] || { echo "crd.sh: $manifest is missing" >&2; exit 1; }
echo "$manifest"
