#!/usr/bin/env bash
# Builds the virtualenv of vLLM's CPU build (vllm.txt, installed without its dependencies,
# then requirements.txt, every package pinned) into a cache outside the repository, keyed
# by the hash of both files and the Python version. Prints the virtualenv's interpreter:
# what GATEWAY_VLLM_PYTHON names. A warm run installs nothing. --cached: print it only if
# it is built (exit 1 otherwise). GRIDWEAVE_VLLM_CACHE moves the cache root; PYTHON picks
# the interpreter the virtualenv is made from (default python3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
key=$( { cat "$here/vllm.txt" "$here/requirements.txt"; echo "$version"; } | sha256sum | cut -c1-16)
cache_root=${GRIDWEAVE_VLLM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridweave/vllm}
out="$cache_root/$key"
if [ -f "$out/.complete" ]; then
  echo "$out/bin/python"
  exit 0
fi
if [ "${1:-}" = "--cached" ]; then
  echo "build.sh: vLLM's virtualenv is not built (make vllm)" >&2
  exit 1
fi
echo "building vLLM's virtualenv into $out (first run only, a few minutes)..." >&2
rm -rf "$out"
"$python" -m venv "$out"
pip() { "$out/bin/python" -m pip --disable-pip-version-check --quiet "$@" >&2; }
pip install --no-deps -r "$here/vllm.txt"
pip install -r "$here/requirements.txt"
# vLLM imports and finds its platform: the build is usable, not only installed
"$out/bin/python" -c 'import vllm.platforms as p; print(p.current_platform.device_type)' >&2
touch "$out/.complete"
echo "$out/bin/python"
