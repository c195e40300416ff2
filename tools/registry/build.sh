#!/usr/bin/env bash
# Builds the distribution registry (github.com/distribution/distribution/v3/cmd/registry,
# the version pinned in go.mod and go.sum) into a cache outside the repository, keyed by
# the hash of go.mod and go.sum. Prints the directory holding the `registry` binary; a warm
# run builds nothing. GRIDWEAVE_REGISTRY_CACHE moves the cache root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/go-build.sh
source "$here/../lib/go-build.sh"
go_build_cached "$here" "${GRIDWEAVE_REGISTRY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/registry}" \
  registry=github.com/distribution/distribution/v3/cmd/registry
