#!/usr/bin/env bash
# Builds Prometheus (github.com/prometheus/prometheus/cmd/prometheus, the version pinned in
# go.mod and go.sum) into a cache outside the repository, keyed by the hash of go.mod,
# go.sum and the build tags. Prints the directory holding the `prometheus` binary; a warm
# run builds nothing. GRIDWEAVE_PROMETHEUS_CACHE moves the cache root.
# The tag remove_all_sd leaves out every service-discovery plugin but file and http (the
# all-in-one writes static targets); without the tag builtinassets the web UI is not
# embedded: Gridweave reads only the HTTP API (Grafana too).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/go-build.sh
source "$here/../lib/go-build.sh"
GO_BUILD_TAGS=remove_all_sd go_build_cached "$here" \
  "${GRIDWEAVE_PROMETHEUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/prometheus}" \
  prometheus=github.com/prometheus/prometheus/cmd/prometheus
