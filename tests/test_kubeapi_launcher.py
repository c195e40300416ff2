"""The test apiserver launcher itself: it serves, and it leaves no process behind."""

from __future__ import annotations

import os

import pytest
from kubernetes import client

from tests.support.kubeapi import KubeAPI, api_client_for, install_crds, run_local_apiserver

pytestmark = pytest.mark.kubeapi


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _children_pids() -> set[int]:
    me = str(os.getpid())
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            pids.add(int(entry))
    return pids


def test_started_server_installs_crds_and_stops_without_leftovers(kubeapi: KubeAPI) -> None:
    if not kubeapi.started_here:
        pytest.skip("an external cluster is configured; nothing is started locally")
    before = _children_pids()
    with run_local_apiserver() as api:
        started = _children_pids() - before
        assert len(started) == 2  # etcd and the apiserver
        install_crds(api.kubeconfig)
        with api_client_for(api.kubeconfig) as api_client:
            crds = client.ApiextensionsV1Api(api_client).list_custom_resource_definition()
        assert {crd.metadata.name for crd in crds.items if crd.metadata} >= {
            "gridweavejobs.gridweave.io",
            "gridweaveendpoints.gridweave.io",
        }
    assert not [pid for pid in started if _alive(pid)]
