#!/usr/bin/env bash
# Builds Gridweave's default job image, the root filesystem every job container runs in
# unless its owner chose another: Debian bookworm's minimal base with its Python 3.11,
# made with mmdebstrap from Debian's packages (no Docker Hub). The runner is not in it: the
# worker mounts it read-only at /opt/gridweave. Unpacked into a cache outside the
# repository keyed by this script's hash, linked as <cache>/base; prints the root filesystem's directory. A warm
# run builds nothing. Needs root (the image's files belong to root) and mmdebstrap, which
# it installs from Debian's packages when missing. GRIDWEAVE_SANDBOX_CACHE moves the cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# Outside any home directory: every job's uid must be able to pass through to the image.
cache=${GRIDWEAVE_SANDBOX_CACHE:-/var/cache/gridweave/sandbox}
key=$(sha256sum "$here/build.sh" | cut -c1-16)
image="$cache/base-$key"
# the gateway's default (GATEWAY_SANDBOX_ROOTFS) is $cache/base/rootfs
if [ -d "$image/rootfs/opt/gridweave" ]; then
  ln -sfn "base-$key" "$cache/base"
  echo "$image/rootfs"
  exit 0
fi
if ! command -v mmdebstrap >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "*** install mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
fi
mkdir -p "$cache"
chmod 755 "$cache"
work=$(mktemp -d "$cache/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
mmdebstrap --quiet --mode=root --variant=minbase --include=python3,ca-certificates \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  bookworm "$work/rootfs.tar" >&2
mkdir "$work/rootfs"
tar -C "$work/rootfs" -xf "$work/rootfs.tar"
rm "$work/rootfs.tar"
# the mount points of every job container (the image's root is read-only in it)
mkdir -p "$work/rootfs/scratch" "$work/rootfs/opt/gridweave"
rm -rf "$image"
mkdir "$image"
mv "$work/rootfs" "$image/rootfs"
ln -sfn "base-$key" "$cache/base"
echo "$image/rootfs"
