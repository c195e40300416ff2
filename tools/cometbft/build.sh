#!/usr/bin/env bash
# Builds CometBFT (github.com/cometbft/cometbft/cmd/cometbft, the version pinned in go.mod
# and go.sum) into a cache outside the repository, keyed by the hash of go.mod and go.sum.
# Prints the directory holding the `cometbft` binary; a warm run builds nothing.
# GRIDWEAVE_COMETBFT_CACHE moves the cache root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/go-build.sh
source "$here/../lib/go-build.sh"
go_build_cached "$here" "${GRIDWEAVE_COMETBFT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/cometbft}" \
  cometbft=github.com/cometbft/cometbft/cmd/cometbft
