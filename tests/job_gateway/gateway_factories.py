"""The job gateway under test: served on a loopback port over the real Kubernetes API.

Defaults in one place: the inventory file, the settings, a typed blocking CRD client on the
same namespace for the tests' own reads and moves, and the HTTP client with the token.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from kubernetes import config as k8s_config

from gridweave_clients.gateway import GatewayClient
from gridweave_controller import CrdClient
from gridweave_controller._kube_store import KubeStore
from gridweave_runtime.storage import LocalObjectStore
from job_gateway.app import create_app
from job_gateway.endpoints import EndpointSettings
from job_gateway.execution import ExecutionSettings
from job_gateway.inventory import InventorySource, StaticFileSource
from job_gateway.settings import GatewaySettings
from tests.support.credentials import service_auth
from tests.support.http_server import serve_in_thread
from tests.support.kubeapi import KubeAPI, namespace_for_test

TOKEN = "test-internal-token-gateway-7f3a"
AUTH_HEADERS = {"Authorization": f"Bearer {TOKEN}"}

#: gpu-a: two NVIDIA A100 80GB (ready); gpu-b: an AMD MI250 64GB on a NotReady node, so
#: AMD jobs are possible but wait (the scheduler skips NotReady nodes).
INVENTORY_YAML = """
nodes:
  - name: gpu-a
    gpus:
      - {index: 0, vendor: nvidia, model: NVIDIA A100 80GB, vram_mb: 81920}
      - {index: 1, vendor: nvidia, model: NVIDIA A100 80GB, vram_mb: 81920}
  - name: gpu-b
    ready: false
    gpus:
      - {index: 0, vendor: amd, model: AMD Instinct MI250, vram_mb: 65536}
"""


def new_job_id(prefix: str = "job") -> str:
    """A fresh DNS-1123 job id."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def submit_body(job_id: str | None = None, **overrides: Any) -> dict[str, Any]:
    """A valid submission: 8 GiB on one AMD GPU (possible, waits on the NotReady node)."""
    return {
        "job_id": job_id or new_job_id(),
        "user_id": "alice",
        "function_ref": "file:///objects/fn.pkl",
        "vram_mb": 8192,
        "vendor": "amd",
        **overrides,
    }


@contextmanager
def blocking_crd(kubeconfig: Path, namespace: str) -> Iterator[CrdClient]:
    """A typed blocking client on the same namespace (the tests' own reads and moves)."""
    api_client = k8s_config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig)
    )
    store = KubeStore(api_client)
    try:
        yield CrdClient(store, namespace)
    finally:
        store.close()


@dataclass(frozen=True)
class GatewayServer:
    """A running gateway: its URL, raw and typed HTTP clients, the CRDs behind it."""

    url: str
    http: httpx.Client
    client: GatewayClient
    crd: CrdClient
    namespace: str
    storage_dir: Path


@contextmanager
def running_gateway(
    kubeapi: KubeAPI, workdir: Path, *, inventory_yaml: str = INVENTORY_YAML, **settings: Any
) -> Iterator[GatewayServer]:
    """The gateway app on a loopback port, direct to the real apiserver.

    In a new namespace, or in ``namespace=`` (a restart over another gateway's jobs). Jobs
    are placed but not run unless ``execution=`` asks for execution on Ray. The inventory
    is ``inventory_yaml`` in a file of the workdir, unless ``inventory_source=`` gives one.
    """
    namespace = settings.pop("namespace", None) or f"gw-gateway-{uuid.uuid4().hex[:8]}"
    # jobs run on Ray only when a test asks (execution=ExecutionSettings(...))
    execution = settings.pop("execution", None) or ExecutionSettings(execute_jobs=False)
    inventory_source: InventorySource | None = settings.pop("inventory_source", None)
    endpoint_settings: EndpointSettings | None = settings.pop("endpoint_settings", None)
    inventory_file = workdir / "inventory.yaml"
    inventory_file.write_text(inventory_yaml)
    storage_dir = workdir / "objects"
    values: dict[str, Any] = {
        **service_auth(TOKEN),
        "crd_transport": "direct",
        "kubeconfig": kubeapi.kubeconfig,
        "namespace": namespace,
        "state_dir": workdir,
        "storage_dir": storage_dir,
        # no metering unless a test names one: its usage reports wait (nothing listens),
        # and no endpoint is billed (a placement would wait for its last run's settlement)
        "metering_service_url": "http://127.0.0.1:9",
        **({} if "metering_service_url" in settings else {"endpoint_billing_interval_seconds": 0}),
        **settings,
    }
    app = create_app(
        GatewaySettings(**values),
        inventory_source=inventory_source or StaticFileSource(inventory_file),
        store=LocalObjectStore(storage_dir),
        execution=execution,
        endpoint_settings=endpoint_settings,
    )
    with ExitStack() as stack:
        stack.enter_context(namespace_for_test(kubeapi, namespace))
        url = stack.enter_context(serve_in_thread(app, app.state.settings))
        http = stack.enter_context(httpx.Client(base_url=url, headers=AUTH_HEADERS, timeout=30))
        client = stack.enter_context(GatewayClient(url, TOKEN))
        crd = stack.enter_context(blocking_crd(kubeapi.kubeconfig, namespace))
        yield GatewayServer(url, http, client, crd, namespace, storage_dir)
