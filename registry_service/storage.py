"""What the registry's filesystem storage holds, read without the registry.

Layout of ``distribution``'s filesystem driver (under ``docker/registry/v2``)::

    blobs/<algorithm>/<first two hex digits>/<hex>/data
    repositories/<name...>/_manifests/revisions/<algorithm>/<hex>/link
    repositories/<name...>/_layers/<algorithm>/<hex>/link

A namespace's usage is the set of blobs its manifests use: each manifest of its
repositories whose blob exists, and the config, layers and child manifests it names (a blob
named twice counts once). Blobs uploaded but not yet named by a manifest (a push under way)
are left out until their manifest is pushed: the registry's notifications count them
meanwhile.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from gridweave_clients.platform.registry import RegistryBlob, RegistryUsageReport

__all__ = ["blob_bytes", "usage_report"]

_V2 = Path("docker") / "registry" / "v2"


def _blob_path(root: Path, digest: str) -> Path:
    algorithm, _, hex_digest = digest.partition(":")
    return root / _V2 / "blobs" / algorithm / hex_digest[:2] / hex_digest / "data"


def blob_bytes(root: Path) -> int:
    """Bytes of every blob stored (what a collection may free)."""
    total = 0
    for directory, _, files in os.walk(root / _V2 / "blobs"):
        if "data" in files:
            total += (Path(directory) / "data").stat().st_size
    return total


def _repositories(root: Path) -> Iterator[tuple[str, Path]]:
    base = root / _V2 / "repositories"
    for directory, subdirectories, _ in os.walk(base):
        if "_manifests" in subdirectories:
            path = Path(directory)
            yield path.relative_to(base).as_posix(), path
            subdirectories[:] = [name for name in subdirectories if not name.startswith("_")]


def _revisions(repository: Path) -> Iterator[str]:
    revisions = repository / "_manifests" / "revisions"
    for link in revisions.glob("*/*/link"):
        try:
            yield link.read_text().strip()
        except OSError:  # removed while we read: a delete or a collection
            continue


def _named_digests(manifest: bytes) -> list[str]:
    try:
        document = json.loads(manifest)
    except ValueError:
        return []
    if not isinstance(document, dict):
        return []
    named = []
    for key in ("config", "subject"):
        entry = document.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("digest"), str):
            named.append(entry["digest"])
    for key in ("layers", "manifests", "blobs", "fsLayers"):
        for entry in document.get(key) or []:
            if isinstance(entry, dict):
                digest = entry.get("digest") or entry.get("blobSum")
                if isinstance(digest, str):
                    named.append(digest)
    return named


def usage_report(root: Path) -> RegistryUsageReport:
    """Every (namespace, blob) the storage's manifests use, with the blob's size."""
    found: dict[tuple[str, str], int] = {}
    for name, repository in _repositories(root):
        namespace = name.split("/", 1)[0]
        for manifest_digest in _revisions(repository):
            path = _blob_path(root, manifest_digest)
            try:
                manifest = path.read_bytes()
            except OSError:  # collected, or a link left behind
                continue
            found[(namespace, manifest_digest)] = len(manifest)
            for digest in _named_digests(manifest):
                try:
                    found[(namespace, digest)] = _blob_path(root, digest).stat().st_size
                except OSError:
                    continue
    return RegistryUsageReport(
        blobs=[
            RegistryBlob(namespace=namespace, digest=digest, size_bytes=size)
            for (namespace, digest), size in sorted(found.items())
        ]
    )
