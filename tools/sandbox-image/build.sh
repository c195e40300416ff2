#!/usr/bin/env bash
# Builds Gridweave's default job image, the root filesystem every job container runs in
# unless its owner chose another: Debian bookworm's minimal base with its Python 3.11 and
# pip (a job's pip= environment is installed with it), made with mmdebstrap from Debian's
# packages (no Docker Hub). The runner is not in it: the worker mounts it read-only at
# /opt/gridweave. Unpacked into a cache outside the repository keyed by this script's hash,
# linked as <cache>/base; beside the root filesystem, the same image as an OCI layout
# (<cache>/base/oci, tag python-3.11, made with umoci) that `gridweave up` and deploy.sh
# push to the registry as gridweave/python:3.11, the image users build theirs FROM.
# Prints the root filesystem's directory. A warm run builds nothing. Needs root (the
# image's files belong to root), mmdebstrap and umoci, which it installs from Debian's
# packages when missing. GRIDWEAVE_SANDBOX_CACHE moves the cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# Outside any home directory: every job's uid must be able to pass through to the image.
cache=${GRIDWEAVE_SANDBOX_CACHE:-/var/cache/gridweave/sandbox}
key=$(sha256sum "$here/build.sh" | cut -c1-16)
image="$cache/base-$key"
tag=python-3.11
# the gateway's default (GATEWAY_SANDBOX_ROOTFS) is $cache/base/rootfs
if [ -d "$image/rootfs/opt/gridweave" ] && [ -f "$image/oci/index.json" ]; then
  ln -sfn "base-$key" "$cache/base"
  echo "$image/rootfs"
  exit 0
fi
missing=()
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v umoci >/dev/null || missing+=(umoci)
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "*** install ${missing[*]} (apt-get install ${missing[*]})" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
mkdir -p "$cache"
chmod 755 "$cache"
work=$(mktemp -d "$cache/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
mmdebstrap --quiet --mode=root --variant=minbase --include=python3,python3-pip,ca-certificates \
  --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  bookworm "$work/rootfs.tar" >&2
mkdir "$work/rootfs"
tar -C "$work/rootfs" -xf "$work/rootfs.tar"
rm "$work/rootfs.tar"
# the mount points of every job container (the image's root is read-only in it)
mkdir -p "$work/rootfs/scratch" "$work/rootfs/opt/gridweave" "$work/rootfs/run/gridweave"
# the same files as an OCI image of one layer, its environment what a job container sets
umoci init --layout "$work/oci"
umoci new --image "$work/oci:$tag"
umoci insert --image "$work/oci:$tag" "$work/rootfs" / >/dev/null
umoci config --image "$work/oci:$tag" --author=gridweave \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.env LANG=C.UTF-8 --config.cmd python3 \
  --config.label org.opencontainers.image.title=gridweave/python:3.11
umoci gc --layout "$work/oci"
rm -rf "$image"
mkdir "$image"
mv "$work/rootfs" "$image/rootfs"
mv "$work/oci" "$image/oci"
ln -sfn "base-$key" "$cache/base"
echo "$image/rootfs"
