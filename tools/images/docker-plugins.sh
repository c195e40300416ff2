#!/usr/bin/env bash
# Docker's buildx and compose v2 CLI plugins from Debian's packages of its next release
# (trixie's docker-buildx and docker-compose need only libc 2.34; bookworm has compose v1
# and no buildx), unpacked into a cache outside the repository, never installed: the tests
# point DOCKER_CONFIG at the printed directory, whose cli-plugins/ hold them. A warm run
# downloads nothing. GRIDWEAVE_IMAGES_CACHE moves the cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${GRIDWEAVE_IMAGES_CACHE:-/var/cache/gridweave/images}
release=trixie
packages=(docker-buildx docker-compose)
key=$(sha256sum <"$here/docker-plugins.sh" | cut -c1-16)
out="$cache/docker-config-$key"
if [ -x "$out/cli-plugins/docker-compose" ] && [ -x "$out/cli-plugins/docker-buildx" ]; then
  echo "$out"
  exit 0
fi
mkdir -p "$cache"
work=$(mktemp -d "$cache/.plugins-XXXXXX")
trap 'rm -rf "$work"' EXIT
# apt with a sources list and package lists of its own: the host's apt is left as it is
mkdir -p "$work/lists/partial" "$work/archives/partial"
echo "deb http://deb.debian.org/debian $release main" >"$work/sources.list"
apt_options=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives" -q)
apt-get "${apt_options[@]}" update >&2
(cd "$work" && apt-get "${apt_options[@]}" download "${packages[@]}" >&2)
mkdir -p "$work/config/cli-plugins"
for package in "${packages[@]}"; do
  dpkg-deb -x "$work/${package}"_*.deb "$work/root"
  cp "$work/root/usr/libexec/docker/cli-plugins/$package" "$work/config/cli-plugins/"
done
rm -rf "$out"
mv "$work/config" "$out"
echo "$out"
