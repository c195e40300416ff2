"""A Kubernetes API whose watches answer 410 after an etcd compaction, for the watch tests.

The apiserver serves a watch from its watch cache, which keeps a window of events of its
own (at least 75 seconds and 100 events) whatever etcd compacted: a compaction alone does
not make a watch from an old resourceVersion fail there. With ``--watch-cache=false`` the
watch goes to etcd itself, and a resourceVersion etcd compacted away is answered as it is
on a busy cluster once the cache window has moved on: an ERROR event with a 410 Status. So
this is the same launcher (:mod:`gridweave_runtime.kubeapi`) with the watch cache off, and
:func:`compact_etcd` compacts its etcd through etcd's v3 HTTP gateway
(``POST /v3/kv/compaction``) at the current revision.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from gridweave_runtime.kubeapi import KubeAPIServer
from tests.support.kubeapi import CRD_MANIFESTS, KubeAPI, build_binaries


@dataclass(frozen=True)
class CompactingKubeAPI:
    """The API (as the other tests see one) and its etcd's client URL."""

    api: KubeAPI
    etcd_url: str


@contextmanager
def compacting_kube_api() -> Iterator[CompactingKubeAPI]:
    """A fresh etcd + kube-apiserver without watch cache, the Gridweave CRDs installed."""
    binaries = build_binaries()
    with tempfile.TemporaryDirectory(prefix="gridweave-kubeapi-uncached-") as tmp:
        server = KubeAPIServer(
            Path(tmp),
            binaries=binaries,
            durable=False,
            crd_manifests=CRD_MANIFESTS,
            apiserver_args=["--watch-cache=false"],
        )
        with server:
            api = KubeAPI(kubeconfig=server.kubeconfig, started_here=True)
            yield CompactingKubeAPI(api, server.etcd_url)


def etcd_revision(etcd_url: str) -> int:
    """etcd's current revision (the resourceVersion of the newest write)."""
    key = base64.b64encode(b"/").decode()
    answer = httpx.post(f"{etcd_url}/v3/kv/range", json={"key": key, "limit": 1}, timeout=10)
    answer.raise_for_status()
    return int(answer.json()["header"]["revision"])


def compact_etcd(etcd_url: str) -> int:
    """Compact etcd's history up to its current revision; that revision."""
    revision = etcd_revision(etcd_url)
    answer = httpx.post(
        f"{etcd_url}/v3/kv/compaction",
        json={"revision": str(revision), "physical": True},
        timeout=30,
    )
    answer.raise_for_status()
    return revision
