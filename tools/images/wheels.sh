#!/usr/bin/env bash
# Downloads the wheels Gridweave's images install, for builds without network (the tests'
# private Docker daemon): '.[server]' and the build backend at exactly the versions the head
# runs (the constraints are PYTHON's `pip freeze`, default .venv/bin/python), binaries only
# (nothing is compiled). Into a cache outside the repository keyed by pyproject.toml, the
# head's versions and this script, linked as <cache>/wheels; prints the directory. A warm
# run downloads nothing. GRIDWEAVE_IMAGES_CACHE moves the cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${GRIDWEAVE_IMAGES_CACHE:-/var/cache/gridweave/images}
python=${PYTHON:-$repo/.venv/bin/python}
mkdir -p "$cache"
work=$(mktemp -d "$cache/.wheels-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$python" -m pip freeze --exclude-editable | grep -E '^[A-Za-z0-9_.-]+(\[[^]]*\])?==' >"$work/constraints.txt"
build_backend=$("$python" -c 'import tomllib; print(" ".join(tomllib.load(open("'"$repo"'/pyproject.toml", "rb"))["build-system"]["requires"]))')
key=$(cat "$here/wheels.sh" "$repo/pyproject.toml" "$work/constraints.txt" |
  sha256sum | cut -c1-16)
out="$cache/wheels-$key"
if [ ! -f "$out/constraints.txt" ]; then
  # shellcheck disable=SC2086 # the build backend's requirements are words
  "$python" -m pip download --quiet --only-binary=:all: --dest "$work/wheels" \
    --constraint "$work/constraints.txt" "${repo}[server]" $build_backend wheel >&2
  # the project itself is built in the image from its sources
  rm -f "$work/wheels"/gridweave-*
  mv "$work/constraints.txt" "$work/wheels/constraints.txt"
  rm -rf "$out"
  mv "$work/wheels" "$out"
  # the wheels of versions the head no longer runs
  find "$cache" -maxdepth 1 -name 'wheels-*' ! -name "wheels-$key" -exec rm -rf {} +
fi
ln -sfn "wheels-$key" "$cache/wheels"
echo "$out"
