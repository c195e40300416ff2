"""GridweaveJob and GridweaveEndpoint as plain functions: ``from gridweave_controller import crd``.

The functions act on one module-level :class:`~gridweave_controller.client.CrdClient`
(the transport seam): :func:`init_k8s_client` installs one over the Kubernetes API,
:func:`use_client` installs any other (an in-memory store in tests, another cluster).
The first call without either initializes from the environment. Every transport
(this one, the proxied ``job_gateway.crd_client`` and ``tests.mock_crd``) exposes exactly
these functions with exactly these signatures.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from gridweave_controller._kube_store import KubeStore
from gridweave_controller.client import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS, CrdClient
from gridweave_controller.errors import TransportError
from gridweave_controller.models import Endpoint, Job, Vendor
from gridweave_controller.phases import JobPhase

__all__ = [
    "create_endpoint",
    "create_job",
    "delete_endpoint",
    "delete_job",
    "get_endpoint",
    "get_job",
    "init_k8s_client",
    "list_endpoints",
    "list_jobs",
    "set_endpoint_deploying",
    "set_endpoint_failed",
    "set_endpoint_health",
    "set_endpoint_running",
    "set_endpoint_stopped",
    "set_job_allocated",
    "set_job_cancelled",
    "set_job_completed",
    "set_job_failed",
    "set_job_pending",
    "set_job_running",
    "set_job_timed_out",
    "use_client",
    "wait_for_job",
]

DEFAULT_NAMESPACE = "gridweave"
NAMESPACE_ENV = "KUBERAY_NAMESPACE"

_lock = threading.Lock()
_first_use_lock = threading.Lock()
_active: CrdClient | None = None


def _load_api_client(kubeconfig: str | os.PathLike[str] | None) -> k8s_client.ApiClient:
    if kubeconfig is None:
        try:
            configuration = k8s_client.Configuration()
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
            return k8s_client.ApiClient(configuration)
        except k8s_config.ConfigException:
            pass
    # Read KUBECONFIG now: the client library reads it once, at import.
    if kubeconfig is not None:
        config_file = os.fspath(kubeconfig)
    else:
        config_file = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    try:
        loaded: k8s_client.ApiClient = k8s_config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=config_file
        )
    except (k8s_config.ConfigException, OSError) as exc:
        raise TransportError(f"no Kubernetes configuration found: {exc}") from exc
    return loaded


def _install(new: CrdClient) -> None:
    global _active
    with _lock:
        previous, _active = _active, new
    if previous is not None and previous is not new and isinstance(previous.store, KubeStore):
        previous.store.close()


def init_k8s_client(
    *, kubeconfig: str | os.PathLike[str] | None = None, namespace: str | None = None
) -> CrdClient:
    """Connect: in-cluster config, else ``kubeconfig`` / ``KUBECONFIG`` / ``~/.kube/config``.

    The namespace is ``namespace``, else ``KUBERAY_NAMESPACE``, else ``gridweave``.
    """
    resolved = namespace or os.environ.get(NAMESPACE_ENV) or DEFAULT_NAMESPACE
    new = CrdClient(KubeStore(_load_api_client(kubeconfig)), resolved)
    _install(new)
    return new


def use_client(client: CrdClient) -> None:
    """Make ``client`` the one the module functions use (any store, any namespace)."""
    _install(client)


def _client() -> CrdClient:
    active = _active
    if active is not None:
        return active
    with _first_use_lock:  # two threads' first calls build one client, not two
        if _active is None:
            init_k8s_client()
    assert _active is not None
    return _active


# -- jobs ---------------------------------------------------------------------------------


def create_job(
    job_id: str,
    user_id: str,
    function_ref: str,
    *,
    vram_mb: int,
    gpu_count: int = 1,
    vendor: Vendor = "any",
    owner: str | None = None,
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
    max_retries: int = DEFAULT_MAX_RETRIES,
    labels: Mapping[str, str] | None = None,
) -> Job:
    """Create a GridweaveJob in phase Pending."""
    return _client().create_job(
        job_id,
        user_id,
        function_ref,
        vram_mb=vram_mb,
        gpu_count=gpu_count,
        vendor=vendor,
        owner=owner,
        timeout_seconds=timeout_seconds,
        max_retries=max_retries,
        labels=labels,
    )


def get_job(job_id: str) -> Job:
    """Read one job."""
    return _client().get_job(job_id)


def list_jobs(label_selector: str | None = None, *, user_id: str | None = None) -> list[Job]:
    """List jobs, optionally by label selector and by user."""
    return _client().list_jobs(label_selector, user_id=user_id)


def delete_job(job_id: str) -> None:
    """Delete one job."""
    _client().delete_job(job_id)


def set_job_allocated(job_id: str, node: str, gpu_indices: Sequence[int]) -> Job:
    """Pending -> Allocated on a node and its GPU indices."""
    return _client().set_job_allocated(job_id, node, gpu_indices)


def set_job_running(job_id: str) -> Job:
    """Allocated -> Running."""
    return _client().set_job_running(job_id)


def set_job_completed(job_id: str, wall_seconds: float, result_ref: str | None = None) -> Job:
    """Running -> Completed, billing ``ceil(wall_seconds)``."""
    return _client().set_job_completed(job_id, wall_seconds, result_ref)


def set_job_failed(
    job_id: str, reason: str, message: str = "", wall_seconds: float | None = None
) -> Job:
    """Pending, Allocated or Running -> Failed with a CamelCase reason."""
    return _client().set_job_failed(job_id, reason, message, wall_seconds)


def set_job_cancelled(job_id: str, message: str = "", wall_seconds: float | None = None) -> Job:
    """Pending, Allocated or Running -> Cancelled."""
    return _client().set_job_cancelled(job_id, message, wall_seconds)


def set_job_timed_out(job_id: str, message: str = "", wall_seconds: float | None = None) -> Job:
    """Running -> TimedOut."""
    return _client().set_job_timed_out(job_id, message, wall_seconds)


def set_job_pending(job_id: str, reason: str, message: str = "") -> Job:
    """Allocated or Running -> Pending (requeue; ``attempts`` + 1)."""
    return _client().set_job_pending(job_id, reason, message)


def wait_for_job(job_id: str, phases: Iterable[JobPhase | str], timeout: float = 60.0) -> Job:
    """Poll until the job is in one of ``phases``; raise WaitTimedOut after ``timeout`` s."""
    return _client().wait_for_job(job_id, phases, timeout)


# -- endpoints ----------------------------------------------------------------------------


def create_endpoint(
    endpoint_id: str,
    user_id: str,
    *,
    vram_mb: int,
    model: str | None = None,
    image: str | None = None,
    mode: Literal["vllm", "custom"] | None = None,
    gpu_count: int = 1,
    vendor: Vendor = "any",
    replicas: int = 1,
    micro_credits_per_second: int = 0,
    micro_credits_per_request: int = 0,
    labels: Mapping[str, str] | None = None,
) -> Endpoint:
    """Create a GridweaveEndpoint in phase Pending (``mode`` defaults from model/image)."""
    return _client().create_endpoint(
        endpoint_id,
        user_id,
        vram_mb=vram_mb,
        model=model,
        image=image,
        mode=mode,
        gpu_count=gpu_count,
        vendor=vendor,
        replicas=replicas,
        micro_credits_per_second=micro_credits_per_second,
        micro_credits_per_request=micro_credits_per_request,
        labels=labels,
    )


def get_endpoint(endpoint_id: str) -> Endpoint:
    """Read one endpoint."""
    return _client().get_endpoint(endpoint_id)


def list_endpoints(
    label_selector: str | None = None, *, user_id: str | None = None
) -> list[Endpoint]:
    """List endpoints, optionally by label selector and by user."""
    return _client().list_endpoints(label_selector, user_id=user_id)


def delete_endpoint(endpoint_id: str) -> None:
    """Delete one endpoint."""
    _client().delete_endpoint(endpoint_id)


def set_endpoint_deploying(endpoint_id: str, node: str, gpu_indices: Sequence[int]) -> Endpoint:
    """Pending, Running, Stopped or Failed -> Deploying on a node and its GPUs."""
    return _client().set_endpoint_deploying(endpoint_id, node, gpu_indices)


def set_endpoint_running(endpoint_id: str, url: str) -> Endpoint:
    """Deploying -> Running at ``url``."""
    return _client().set_endpoint_running(endpoint_id, url)


def set_endpoint_stopped(endpoint_id: str, reason: str, message: str = "") -> Endpoint:
    """Pending, Deploying or Running -> Stopped."""
    return _client().set_endpoint_stopped(endpoint_id, reason, message)


def set_endpoint_failed(endpoint_id: str, reason: str, message: str = "") -> Endpoint:
    """Pending, Deploying or Running -> Failed."""
    return _client().set_endpoint_failed(endpoint_id, reason, message)


def set_endpoint_health(
    endpoint_id: str, healthy: bool, message: str = "", ready_replicas: int | None = None
) -> Endpoint:
    """Record a health probe: ``health``, ``readyReplicas`` and the Healthy condition."""
    return _client().set_endpoint_health(endpoint_id, healthy, message, ready_replicas)
