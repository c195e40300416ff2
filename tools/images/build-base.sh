#!/usr/bin/env bash
# Builds the base image Gridweave's images are built FROM in the tests (BASE_IMAGE): Debian
# bookworm from Debian's packages (mmdebstrap; no Docker Hub), with what the services image
# and the Ray worker image would otherwise apt-get (their Dockerfiles install only what is
# missing, and a test build has no network), and under /usr/local the head's own Python
# (the interpreter of PYTHON, default .venv/bin/python: Ray refuses a worker whose Python
# differs from the head's by a patch level, and Debian's bookworm has 3.11.2), its standard
# library without tests, Tk or the static library, and pip from its ensurepip. Written as a
# tarball for `docker import` into a cache outside the repository keyed by this script, the
# Python and its build, linked as <cache>/base.tar. Prints the tarball's path; a warm run
# builds nothing. Needs root and mmdebstrap. GRIDWEAVE_IMAGES_CACHE moves the cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${GRIDWEAVE_IMAGES_CACHE:-/var/cache/gridweave/images}
python=${PYTHON:-$repo/.venv/bin/python}
prefix=$("$python" -c 'import sys; print(sys.base_prefix)')
version=$("$python" -c 'import platform; print(platform.python_version())')
minor=${version%.*}
[ "$prefix" != /usr ] || {
  echo "build-base.sh: $python is Debian's own Python: build FROM a Debian image with python3" >&2
  exit 1
}
key=$({ cat "$here/build-base.sh" "$prefix/bin/python$minor"; echo "$version"; } |
  sha256sum | cut -c1-16)
tarball="$cache/base-$key.tar"
if [ -f "$tarball" ]; then
  ln -sfn "base-$key.tar" "$cache/base.tar"
  echo "$tarball"
  exit 0
fi
command -v mmdebstrap >/dev/null || {
  [ "$(id -u)" = 0 ] || { echo "*** install mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
}
# the services image: wireguard-tools, iproute2; the worker image: the job sandbox's tools
# (the Makefile's SANDBOX_TOOLS); the copied Python: the libraries its modules link
packages=ca-certificates,wireguard-tools,iproute2,runc,umoci,skopeo,iptables,mmdebstrap
packages+=,libssl3,libffi8,libsqlite3-0,libbz2-1.0,liblzma5,libreadline8,libncursesw6,zlib1g
packages+=,libuuid1,libexpat1,libgdbm6,libnsl2,libtirpc3,libcrypt1
mkdir -p "$cache"
work=$(mktemp -d "$cache/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT
mmdebstrap --quiet --mode=root --variant=minbase --include="$packages" \
  --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  bookworm "$work/rootfs" >&2
rm -rf "$work/rootfs/var/lib/apt/lists/"*
lib="lib/python$minor"
install -D "$prefix/bin/python$minor" "$work/rootfs/usr/local/bin/python$minor"
ln -s "python$minor" "$work/rootfs/usr/local/bin/python3"
ln -s "python$minor" "$work/rootfs/usr/local/bin/python"
cp -a "$prefix"/lib/libpython"$minor".so* "$work/rootfs/usr/local/lib/"
tar -C "$prefix" -c \
  --exclude="$lib/site-packages/*" --exclude="$lib/test" --exclude="$lib/idlelib" \
  --exclude="$lib/tkinter" --exclude="$lib/turtledemo" --exclude="$lib/lib-dynload/_tkinter*" \
  --exclude="$lib/config-*/*.a" --exclude='__pycache__' "$lib" | tar -C "$work/rootfs/usr/local" -x
# the interpreter's RUNPATH names the head's prefix: the loader finds libpython through
# ld.so.cache (/usr/local/lib is in Debian's ld.so.conf)
chroot "$work/rootfs" ldconfig
chroot "$work/rootfs" /usr/local/bin/python3 -m ensurepip --default-pip >/dev/null
chroot "$work/rootfs" /usr/local/bin/python3 -c 'import ssl, sqlite3, ctypes, lzma, bz2, uuid'
tar -C "$work/rootfs" --numeric-owner -cf "$work/base.tar" .
mv "$work/base.tar" "$tarball"
ln -sfn "base-$key.tar" "$cache/base.tar"
echo "$tarball"
