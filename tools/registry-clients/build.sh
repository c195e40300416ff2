#!/usr/bin/env bash
# Builds the registry clients the tests and the benchmark drive, crane
# (github.com/google/go-containerregistry/cmd/crane) and oras (oras.land/oras/cmd/oras),
# at the versions pinned in go.mod and go.sum, into a cache outside the repository keyed by
# the hash of go.mod and go.sum. Prints the directory holding both binaries; a warm run
# builds nothing. GRIDWEAVE_REGISTRY_CLIENTS_CACHE moves the cache root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/go-build.sh
source "$here/../lib/go-build.sh"
go_build_cached "$here" "${GRIDWEAVE_REGISTRY_CLIENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/registry-clients}" \
  crane=github.com/google/go-containerregistry/cmd/crane \
  oras=oras.land/oras/cmd/oras
