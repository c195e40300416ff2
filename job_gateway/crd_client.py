"""The controller API over HTTP: a drop-in for ``gridweave_controller.crd``.

The job gateway has no cluster access; kuberay-service re-exports the typed operations at
``/v1/crd``. Swap the import and the calls, return types and exceptions stay the same::

    from job_gateway import crd_client as crd
    crd.init_k8s_client()          # KUBERAY_URL + GRIDWEAVE_INTERNAL_TOKEN
    job = crd.get_job("job-1")

Retries: every call is retried when the connection could not be made (nothing was sent).
Reads are also retried after a timeout or a dropped connection. Writes (creates, deletes,
phase setters) are not retried once sent: the first attempt may have been applied and the
object moved on since, so a blind repeat could apply a move twice (a requeue after a
re-allocation). The caller gets TransportError and reads the object to decide.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import httpx
from pydantic.alias_generators import to_snake

from gridweave_controller.client import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_SECONDS,
    poll_job_until,
)
from gridweave_controller.errors import (
    Invalid,
    TransportError,
    error_from_status,
    parse_status_body,
)
from gridweave_controller.models import Endpoint, Job, Vendor
from gridweave_controller.phases import JobPhase
from gridweave_controller.validation import check_name, check_wall_seconds

__all__ = [
    "ProxiedClient",
    "close",
    "connect",
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
    "wait_for_job",
]

URL_ENV = "KUBERAY_URL"
TOKEN_ENV = "GRIDWEAVE_INTERNAL_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8800"
#: Connect attempts for any call (nothing was sent yet, so any call may be repeated).
CONNECT_RETRIES = 3
#: Attempts for reads after a timeout or a dropped connection.
READ_ATTEMPTS = 3
_RETRY_BACKOFF_S = 0.05
#: A request's headers and body go out in two writes; without TCP_NODELAY, Nagle's algorithm
#: holds the body back until the headers are acknowledged.
_SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
_RETRIABLE = (httpx.TimeoutException, httpx.RemoteProtocolError, httpx.ReadError)


class _Connection:
    """kuberay-service's base URL, the token header and httpx's pooled transport.

    Requests go straight to httpx's ``HTTPTransport`` (the connection pool, keep-alive,
    connect retries, timeouts): the ``httpx.Client`` layer above it (cookie jar, redirects,
    auth flow, event hooks) does nothing for this internal JSON API and costs about 0.17 ms of
    CPU per call (docs/benchmarks.md).
    """

    def __init__(
        self, base_url: str, token: str, timeout: httpx.Timeout, transport: httpx.BaseTransport
    ) -> None:
        self.base_url = base_url.rstrip("/") + "/v1/crd"
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "User-Agent": "gridweave-crd-client",
        }
        self.extensions = {"timeout": timeout.as_dict()}
        self.transport = transport
        self.closed = False

    def close(self) -> None:
        """Close the pooled connections; a later send fails instead of opening new ones."""
        self.closed = True
        self.transport.close()

    def send(
        self,
        method: str,
        path: str,
        json: Mapping[str, Any] | None,
        params: Mapping[str, str] | None,
    ) -> httpx.Response:
        """Send one request on a pooled connection; the whole answer, read."""
        if self.closed:  # httpx's transport would quietly open a new pool
            raise RuntimeError("the connection to kuberay-service was closed")
        request = httpx.Request(
            method,
            self.base_url + path,
            params=params,
            headers=self.headers,
            json=json,
            extensions=self.extensions,
        )
        response = self.transport.handle_request(request)
        try:
            response.read()
        finally:
            response.close()
        return response


class ProxiedClient:
    """The typed operations over one pooled HTTP connection to kuberay-service's ``/v1/crd``.

    The same methods, parameters and return types as :class:`~gridweave_controller.CrdClient`.
    Created unconnected; the first call connects from the environment unless
    :meth:`connect` was called.
    """

    def __init__(self) -> None:
        self._connection_now: _Connection | None = None
        self._lock = threading.Lock()
        self._first_use_lock = threading.Lock()

    def connect(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Point at kuberay-service at ``base_url``, authenticating with the internal token."""
        if not token:
            raise Invalid(f"{TOKEN_ENV} is required to call kuberay-service", field=TOKEN_ENV)
        connection = _Connection(
            base_url,
            token,
            httpx.Timeout(timeout, connect=5.0),
            transport
            or httpx.HTTPTransport(
                retries=CONNECT_RETRIES,
                socket_options=_SOCKET_OPTIONS,
                limits=httpx.Limits(max_connections=64, max_keepalive_connections=32),
            ),
        )
        with self._lock:
            previous, self._connection_now = self._connection_now, connection
        if previous is not None:
            previous.close()

    def connect_from_environment(self) -> None:
        """Connect to ``KUBERAY_URL`` (default port 8800 on loopback) with the internal token."""
        self.connect(os.environ.get(URL_ENV) or DEFAULT_URL, os.environ.get(TOKEN_ENV, ""))

    def close(self) -> None:
        """Close the pooled connections; the next call connects again."""
        with self._lock:
            previous, self._connection_now = self._connection_now, None
        if previous is not None:
            previous.close()

    def _connection(self) -> _Connection:
        connection = self._connection_now
        if connection is not None:
            return connection
        with self._first_use_lock:  # two threads' first calls make one connection, not two
            if self._connection_now is None:
                self.connect_from_environment()
            connection = self._connection_now
        assert connection is not None
        return connection

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        """One request; a non-2xx answer raises the controller error its Status names."""
        attempts = READ_ATTEMPTS if method == "GET" else 1
        for attempt in range(1, attempts + 1):
            try:
                response = self._connection().send(method, path, json, params)
            except _RETRIABLE as exc:
                if attempt == attempts:
                    raise TransportError(f"kuberay-service {method} {path}: {exc!r}") from exc
                time.sleep(_RETRY_BACKOFF_S * attempt)
                continue
            except (httpx.HTTPError, RuntimeError) as exc:  # RuntimeError: closed meanwhile
                raise TransportError(f"kuberay-service {method} {path}: {exc!r}") from exc
            return _result(response)
        raise AssertionError("unreachable")  # pragma: no cover

    def _job(self, method: str, path: str, json: Mapping[str, Any] | None = None) -> Job:
        return Job.from_raw(self.call(method, path, json=json))

    def _endpoint(self, method: str, path: str, json: Mapping[str, Any] | None = None) -> Endpoint:
        return Endpoint.from_raw(self.call(method, path, json=json))

    # -- jobs ---------------------------------------------------------------------------------

    def create_job(
        self,
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
        body = {
            "jobId": job_id,
            "userId": user_id,
            "functionRef": function_ref,
            "vramMb": vram_mb,
            "gpuCount": gpu_count,
            "vendor": vendor,
            "owner": owner,
            "timeoutSeconds": timeout_seconds,
            "maxRetries": max_retries,
            "labels": dict(labels) if labels is not None else None,
        }
        return self._job("POST", "/jobs", json=body)

    def get_job(self, job_id: str) -> Job:
        """Read one job."""
        return self._job("GET", _job_path(job_id))

    def list_jobs(
        self, label_selector: str | None = None, *, user_id: str | None = None
    ) -> list[Job]:
        """List jobs, optionally by label selector and by user."""
        listed = self.call("GET", "/jobs", params=_filters(label_selector, user_id))
        return [Job.from_raw(raw) for raw in listed["items"]]

    def delete_job(self, job_id: str) -> None:
        """Delete one job."""
        self.call("DELETE", _job_path(job_id))

    def set_job_allocated(self, job_id: str, node: str, gpu_indices: Sequence[int]) -> Job:
        """Pending -> Allocated on a node and its GPU indices."""
        body = {"node": node, "gpuIndices": list(gpu_indices)}
        return self._job("POST", _job_path(job_id, "allocated"), json=body)

    def set_job_running(self, job_id: str) -> Job:
        """Allocated -> Running."""
        return self._job("POST", _job_path(job_id, "running"))

    def set_job_completed(
        self, job_id: str, wall_seconds: float, result_ref: str | None = None
    ) -> Job:
        """Running -> Completed, billing ``ceil(wall_seconds)``."""
        check_wall_seconds(wall_seconds)  # NaN and infinity cannot travel as JSON
        body = {"wallSeconds": wall_seconds, "resultRef": result_ref}
        return self._job("POST", _job_path(job_id, "completed"), json=body)

    def set_job_failed(
        self, job_id: str, reason: str, message: str = "", wall_seconds: float | None = None
    ) -> Job:
        """Pending, Allocated or Running -> Failed with a CamelCase reason."""
        check_wall_seconds(wall_seconds)  # NaN and infinity cannot travel as JSON
        body = {"reason": reason, "message": message, "wallSeconds": wall_seconds}
        return self._job("POST", _job_path(job_id, "failed"), json=body)

    def set_job_cancelled(
        self, job_id: str, message: str = "", wall_seconds: float | None = None
    ) -> Job:
        """Pending, Allocated or Running -> Cancelled."""
        check_wall_seconds(wall_seconds)  # NaN and infinity cannot travel as JSON
        body = {"message": message, "wallSeconds": wall_seconds}
        return self._job("POST", _job_path(job_id, "cancelled"), json=body)

    def set_job_timed_out(
        self, job_id: str, message: str = "", wall_seconds: float | None = None
    ) -> Job:
        """Running -> TimedOut."""
        check_wall_seconds(wall_seconds)  # NaN and infinity cannot travel as JSON
        body = {"message": message, "wallSeconds": wall_seconds}
        return self._job("POST", _job_path(job_id, "timed-out"), json=body)

    def set_job_pending(self, job_id: str, reason: str, message: str = "") -> Job:
        """Allocated or Running -> Pending (requeue; ``attempts`` + 1)."""
        body = {"reason": reason, "message": message}
        return self._job("POST", _job_path(job_id, "pending"), json=body)

    def wait_for_job(
        self, job_id: str, phases: Iterable[JobPhase | str], timeout: float = 60.0
    ) -> Job:
        """Poll until the job is in one of ``phases``; raise WaitTimedOut after ``timeout`` s."""
        return poll_job_until(self.get_job, job_id, phases, timeout)

    # -- endpoints ----------------------------------------------------------------------------

    def create_endpoint(
        self,
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
        body = {
            "endpointId": endpoint_id,
            "userId": user_id,
            "vramMb": vram_mb,
            "model": model,
            "image": image,
            "mode": mode,
            "gpuCount": gpu_count,
            "vendor": vendor,
            "replicas": replicas,
            "microCreditsPerSecond": micro_credits_per_second,
            "microCreditsPerRequest": micro_credits_per_request,
            "labels": dict(labels) if labels is not None else None,
        }
        return self._endpoint("POST", "/endpoints", json=body)

    def get_endpoint(self, endpoint_id: str) -> Endpoint:
        """Read one endpoint."""
        return self._endpoint("GET", _endpoint_path(endpoint_id))

    def list_endpoints(
        self, label_selector: str | None = None, *, user_id: str | None = None
    ) -> list[Endpoint]:
        """List endpoints, optionally by label selector and by user."""
        listed = self.call("GET", "/endpoints", params=_filters(label_selector, user_id))
        return [Endpoint.from_raw(raw) for raw in listed["items"]]

    def delete_endpoint(self, endpoint_id: str) -> None:
        """Delete one endpoint."""
        self.call("DELETE", _endpoint_path(endpoint_id))

    def set_endpoint_deploying(
        self, endpoint_id: str, node: str, gpu_indices: Sequence[int]
    ) -> Endpoint:
        """Pending, Running, Stopped or Failed -> Deploying on a node and its GPUs."""
        body = {"node": node, "gpuIndices": list(gpu_indices)}
        return self._endpoint("POST", _endpoint_path(endpoint_id, "deploying"), json=body)

    def set_endpoint_running(self, endpoint_id: str, url: str) -> Endpoint:
        """Deploying -> Running at ``url``."""
        body = {"url": url}
        return self._endpoint("POST", _endpoint_path(endpoint_id, "running"), json=body)

    def set_endpoint_stopped(self, endpoint_id: str, reason: str, message: str = "") -> Endpoint:
        """Pending, Deploying or Running -> Stopped."""
        body = {"reason": reason, "message": message}
        return self._endpoint("POST", _endpoint_path(endpoint_id, "stopped"), json=body)

    def set_endpoint_failed(self, endpoint_id: str, reason: str, message: str = "") -> Endpoint:
        """Pending, Deploying or Running -> Failed."""
        body = {"reason": reason, "message": message}
        return self._endpoint("POST", _endpoint_path(endpoint_id, "failed"), json=body)

    def set_endpoint_health(
        self, endpoint_id: str, healthy: bool, message: str = "", ready_replicas: int | None = None
    ) -> Endpoint:
        """Record a health probe: ``health``, ``readyReplicas`` and the Healthy condition."""
        body = {"healthy": healthy, "message": message, "readyReplicas": ready_replicas}
        return self._endpoint("POST", _endpoint_path(endpoint_id, "health"), json=body)


def _result(response: httpx.Response) -> Any:
    if response.is_success:
        return response.json() if response.content else None
    status = parse_status_body(response.content)
    fallback = f"kuberay-service answered HTTP {response.status_code}"
    if status is None:
        raise TransportError(f"{fallback}: {response.text[:500]}")
    error = error_from_status(status, response.status_code, fallback=fallback)
    if isinstance(error, Invalid) and error.field is not None and error.field.isidentifier():
        # The wire names are the parameters in camelCase; name the parameter, as the direct
        # transport does.
        error.field = to_snake(error.field)
    raise error


def _job_path(job_id: str, move: str = "") -> str:
    check_name(job_id, field="job_id")
    return f"/jobs/{job_id}" + (f"/{move}" if move else "")


def _endpoint_path(endpoint_id: str, move: str = "") -> str:
    check_name(endpoint_id, field="endpoint_id")
    return f"/endpoints/{endpoint_id}" + (f"/{move}" if move else "")


def _filters(label_selector: str | None, user_id: str | None) -> dict[str, str]:
    params = {"labelSelector": label_selector, "userId": user_id}
    return {key: value for key, value in params.items() if value is not None}


#: The one client the module-level functions are bound to.
_PROXY = ProxiedClient()


def init_k8s_client(
    *, kubeconfig: str | os.PathLike[str] | None = None, namespace: str | None = None
) -> ProxiedClient:
    """Connect to kuberay-service at ``KUBERAY_URL`` with ``GRIDWEAVE_INTERNAL_TOKEN``.

    kuberay-service owns the cluster connection and the namespace, so ``kubeconfig`` and
    ``namespace`` (kept for a drop-in signature) must be left unset here.
    """
    if kubeconfig is not None or namespace is not None:
        raise Invalid(
            "the proxied transport takes its cluster and namespace from kuberay-service",
            field="kubeconfig" if kubeconfig is not None else "namespace",
        )
    _PROXY.connect_from_environment()
    return _PROXY


connect = _PROXY.connect
close = _PROXY.close
create_job = _PROXY.create_job
get_job = _PROXY.get_job
list_jobs = _PROXY.list_jobs
delete_job = _PROXY.delete_job
set_job_allocated = _PROXY.set_job_allocated
set_job_running = _PROXY.set_job_running
set_job_completed = _PROXY.set_job_completed
set_job_failed = _PROXY.set_job_failed
set_job_cancelled = _PROXY.set_job_cancelled
set_job_timed_out = _PROXY.set_job_timed_out
set_job_pending = _PROXY.set_job_pending
wait_for_job = _PROXY.wait_for_job
create_endpoint = _PROXY.create_endpoint
get_endpoint = _PROXY.get_endpoint
list_endpoints = _PROXY.list_endpoints
delete_endpoint = _PROXY.delete_endpoint
set_endpoint_deploying = _PROXY.set_endpoint_deploying
set_endpoint_running = _PROXY.set_endpoint_running
set_endpoint_stopped = _PROXY.set_endpoint_stopped
set_endpoint_failed = _PROXY.set_endpoint_failed
set_endpoint_health = _PROXY.set_endpoint_health
