# shellcheck shell=bash
# Sourced by tools/<name>/build.sh: build pinned Go commands once into a cache outside the
# repository, keyed by the hash of the module's go.sum and go.mod.
#
#   [GO_BUILD_TAGS=tag,tag] go_build_cached MODULE_DIR CACHE_ROOT NAME=PACKAGE...
#
# Prints the directory holding every NAME; a warm run builds nothing. Exits 127 when Go is
# missing (callers report it), else fails on the first build error. GO_BUILD_TAGS, when
# set, is passed to go build -tags and is part of the cache key.
go_build_cached() {
  local here=$1 cache_root=$2
  shift 2
  local key out spec complete=1 names=() tags=${GO_BUILD_TAGS:-}
  # the files' contents, not their paths: every checkout of the same pins shares the entry
  key=$({ cat "$here/go.sum" "$here/go.mod"; [ -z "$tags" ] || echo "tags $tags"; } |
    sha256sum | cut -c1-16)
  out="$cache_root/$key"
  for spec in "$@"; do
    names+=("${spec%%=*}")
    [ -x "$out/${spec%%=*}" ] || complete=0
  done
  if [ "$complete" = 1 ]; then
    echo "$out"
    return 0
  fi
  command -v go >/dev/null 2>&1 || { echo "build.sh: go is not on PATH" >&2; exit 127; }
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  echo "building ${names[*]} into $out (first run only)..." >&2
  for spec in "$@"; do
    (cd "$here" && CGO_ENABLED=0 GOFLAGS=-mod=readonly \
      go build -trimpath -tags="$tags" -ldflags="-s -w" -o "$out.tmp/${spec%%=*}" "${spec#*=}" >&2)
  done
  rm -rf "$out"
  mv "$out.tmp" "$out"
  echo "$out"
}
