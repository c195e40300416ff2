"""kuberay-service as its own process (``python -m kuberay_service``), restarted: the node
registry lives in PostgreSQL, so a node, its address and its token outlive the process."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest

from tests.kuberay_service.node_factories import (
    ADMIN,
    INTERNAL,
    K3S_TOKEN,
    MASTER_KEY,
    node_headers,
    validate_body,
)
from tests.support.credentials import service_auth_env
from tests.support.kubeapi import KubeAPI
from tests.support.kuberay_fixtures import TOKEN
from tests.support.service_process import running_service_process

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]


def test_a_node_outlives_a_restart(
    kubeapi: KubeAPI, kube_namespace: str, database: str, tmp_path: Path
) -> None:
    env = {
        **service_auth_env(TOKEN),
        "GRIDWEAVE_STATE_DIR": str(tmp_path / "state"),
        "KUBERAY_KUBECONFIG": str(kubeapi.kubeconfig),
        "KUBERAY_NAMESPACE": kube_namespace,
        "KUBERAY_DATABASE_URL": database,
        "KUBERAY_WIREGUARD_ENDPOINT": "203.0.113.10:51820",
        "KUBERAY_WIREGUARD_PUBLIC_KEY": MASTER_KEY,
        "KUBERAY_K3S_URL": "https://10.88.0.1:6443",
        "KUBERAY_K3S_TOKEN": K3S_TOKEN,
    }

    def serve(log: str) -> AbstractContextManager[tuple[str, int]]:
        return running_service_process(
            "kuberay_service", env, prefix="KUBERAY_", log=tmp_path / log
        )

    with serve("first.log") as (url, _):
        with httpx.Client(base_url=url, headers=ADMIN) as http:
            key = http.post("/v1/nodes/join-keys", json={"max_uses": 1}).json()["key"]
        body = validate_body(key)
        first = httpx.post(f"{url}/v1/nodes/validate", json=body).json()
        registered = httpx.post(
            f"{url}/v1/nodes/register", headers=node_headers(first["node_token"])
        )
        assert registered.status_code == 200, registered.text

    with serve("second.log") as (url, _):
        with httpx.Client(base_url=url) as http:
            beat = http.post(
                "/v1/nodes/heartbeat", headers=node_headers(first["node_token"]), json={}
            )
            nodes = http.get("/v1/nodes", headers=INTERNAL).json()["nodes"]
            again = http.post("/v1/nodes/validate", json=body)
    assert beat.status_code == 200 and beat.json()["status"] == "Ready"
    assert [(n["name"], n["vpn_ip"]) for n in nodes] == [(body["hostname"], first["vpn_ip"])]
    assert again.status_code == 200 and again.json()["vpn_ip"] == first["vpn_ip"]
