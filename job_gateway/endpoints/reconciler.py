"""The endpoint reconciler: each placed GridweaveEndpoint made to run on Ray Serve.

Driven by the gateway's endpoint informer (``endpoint_changed`` / ``endpoint_deleted``) and
a tick every ``GATEWAY_ENDPOINT_PROBE_SECONDS``; it keeps no state that a restart needs: the
CRDs say what should run, Serve's controller says what does. Each tick reads Serve's
applications once, then takes each endpoint one step:

- Deploying, no application (or one on other GPUs): deploy it, pinned to the node,
  showing the GPUs;
- Deploying, application RUNNING and the probe answers: ``set_endpoint_running(url)``,
  then the health;
- Deploying, DEPLOY_FAILED or not running after the deploy timeout:
  ``set_endpoint_failed`` with Serve's message (a replica that could not install the
  endpoint's ``pip=`` requirements: ``PipInstallFailed`` with pip's words), the application
  deleted;
- Running: probe; ``set_endpoint_health`` when the health or the replicas changed; no
  application (Serve lost it): deployed again, Unhealthy meanwhile;
- Running, idle past ``idleSeconds``: ``set_endpoint_stopped("Idle")``, application deleted;
- Stopped, Failed or deleted: the application deleted;
- Pending again (its node was lost: ``job_gateway.node_loss``): the application deleted,
  and deployed anew once the scheduling loop has placed it on another node;
- Deploying or Running with an application this gateway did not deploy and Serve deployed
  before the endpoint's ``placedAt``: that application is an earlier placement's (a gateway
  restarted after a node loss or an idle stop was written, before the deletion, and the
  endpoint placed again before the first tick): deleted, never adopted, then deployed anew.

Placement is not here: the scheduling loop places Pending (and woken) endpoints and writes
Deploying with the node and GPUs, so endpoints and jobs share one scheduler and one
allocation map; the map frees the VRAM as soon as the endpoint leaves Deploying/Running.
A replica that crashes is restarted by Serve; the probe sees the gap (Unhealthy) and the
recovery. On boot a Running endpoint whose application is there is adopted, never
redeployed, unless that application is older than the endpoint's placement (above).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

import httpx

from gridweave_clients.gateway.reasons import IMAGE_REFUSED
from gridweave_controller.errors import CrdError
from gridweave_controller.models import Endpoint
from gridweave_controller.operations import AsyncClientBase
from gridweave_controller.phases import EndpointPhase, EndpointStopReason
from gridweave_runtime.serve_key import SERVE_KEY_HEADER, serve_key_digest
from gridweave_runtime.storage import StorageConfig
from job_gateway.endpoints import serve_control
from job_gateway.endpoints.replica import STATS_PATH
from job_gateway.endpoints.replica_configs import ReplicaConfigs, deploy_failure
from job_gateway.endpoints.serve_control import AppState
from job_gateway.endpoints.settings import EndpointSettings
from job_gateway.execution.image_pulls import ImageRefusedToOwner, PullTokens
from job_gateway.inventory import Inventory
from job_gateway.sandbox.config import SandboxConfig

__all__ = ["EndpointReconciler", "ReplicaSeen"]

_log = logging.getLogger(__name__)
_ENDED = (EndpointPhase.STOPPED, EndpointPhase.FAILED)
#: Phases with no application to run: one still there is deleted.
_UNDEPLOYED = (*_ENDED, EndpointPhase.PENDING)


@dataclass(frozen=True, slots=True)
class ReplicaSeen:
    """A replica's statistics as the last probe that reached it read them."""

    last_request_at: float
    in_flight: int
    seen_at: float


class EndpointReconciler:
    """Endpoints onto Serve applications, probed, scaled to zero when idle."""

    def __init__(
        self,
        crd: AsyncClientBase,
        settings: EndpointSettings,
        *,
        storage: StorageConfig,
        inventory: Callable[[], Inventory],
        serve_key: str,
        sandbox: SandboxConfig,
        pull_tokens: PullTokens | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``serve_key``: what every replica demands (``gridweave_runtime.serve_key``);
        ``sandbox``: the nodes' sandbox a custom endpoint's container runs in;
        ``pull_tokens``: how a node pulls an endpoint's image with its owner's rights (None:
        an endpoint naming an image fails, ImagePullFailed)."""
        self.crd = crd
        self.settings = settings
        self._configs = ReplicaConfigs(
            settings, storage, sandbox, serve_key_digest(serve_key), pull_tokens
        )
        self._inventory = inventory
        self._clock = clock
        self._endpoints: dict[str, Endpoint] = {}
        self._deleted: set[str] = set()
        #: Endpoints seen sent back to placement (Pending): their application goes first,
        #: even when the informer's next copy (placed again) comes before the tick.
        self._undeploy: set[str] = set()
        #: Applications this gateway deleted (Serve deletes in the background, and may list
        #: one as running for a moment): never adopted; a new one of the name is deployed
        #: once Serve no longer lists the old.
        self._going: set[str] = set()
        self._apps: dict[str, AppState] = {}
        #: Where this gateway deployed each application, and when (monotonic).
        self._deployed: dict[str, tuple[str, tuple[int, ...], float]] = {}
        self._replicas: dict[str, dict[str, ReplicaSeen]] = {}
        self._health: dict[str, tuple[bool, int, str]] = {}
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        #: The resourceVersion each endpoint's waiters read: older copies do not settle them.
        self._after: dict[str, str] = {}
        self._tick = asyncio.Event()
        #: Serve's HTTP proxy as Serve has it (a Serve found running keeps its own port).
        self._proxy = (settings.serve_host, settings.serve_port)
        self._serving = False
        self._http = httpx.AsyncClient(
            timeout=settings.endpoint_probe_timeout_seconds,
            trust_env=False,
            headers={SERVE_KEY_HEADER: serve_key},
        )

    # -- what the informer delivers --------------------------------------------------------

    def endpoint_changed(self, endpoint: Endpoint) -> None:
        """An added or updated endpoint."""
        self._endpoints[endpoint.name] = endpoint
        self._deleted.discard(endpoint.name)
        if endpoint.phase is EndpointPhase.PENDING and (
            endpoint.name in self._apps or endpoint.name in self._deployed
        ):
            self._undeploy.add(endpoint.name)
        if endpoint.phase is EndpointPhase.DEPLOYING or endpoint.phase in _UNDEPLOYED:
            self._tick.set()  # deploy or clean up now, not at the next tick
        self._answer_waiters(endpoint.name)

    def endpoint_deleted(self, endpoint: Endpoint) -> None:
        """A deleted endpoint: its application goes."""
        self._endpoints.pop(endpoint.name, None)
        self._deleted.add(endpoint.name)
        self._tick.set()
        self._answer_waiters(endpoint.name)

    # -- reads -----------------------------------------------------------------------------

    def url(self, endpoint_id: str) -> str:
        """The base URL of the endpoint's route on Serve's HTTP proxy."""
        host, port = self._proxy
        host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"http://{host}:{port}{serve_control.route_prefix(endpoint_id)}"

    def replicas_seen(self, endpoint_id: str) -> dict[str, ReplicaSeen]:
        """The replicas the probes reached lately."""
        return dict(self._replicas.get(endpoint_id, {}))

    async def wait_until_settled(
        self, endpoint_id: str, timeout: float, *, after: str | None = None
    ) -> None:
        """Return when the endpoint runs, has failed or is gone, or after ``timeout``.

        ``after``: a resourceVersion the caller read; an older copy of the informer's (one
        still Running before an idle stop the caller already saw) does not count.
        """
        if after is not None:
            self._after[endpoint_id] = after
        if self._settled(endpoint_id):
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(endpoint_id, []).append(future)
        try:
            with suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(future), timeout)
        finally:
            waiting = self._waiters.get(endpoint_id, [])
            if future in waiting:
                waiting.remove(future)

    def _settled(self, endpoint_id: str) -> bool:
        endpoint = self._endpoints.get(endpoint_id)
        if endpoint is None:
            return True
        after = self._after.get(endpoint_id)
        if after is not None and not _newer(endpoint.metadata.resource_version, after):
            return False
        return endpoint.phase is EndpointPhase.RUNNING or endpoint.phase is EndpointPhase.FAILED

    def _answer_waiters(self, endpoint_id: str) -> None:
        if not self._settled(endpoint_id):
            return
        self._after.pop(endpoint_id, None)
        for future in self._waiters.pop(endpoint_id, []):
            if not future.done():
                future.set_result(None)

    # -- the loop --------------------------------------------------------------------------

    async def start(self) -> None:
        """Start Serve (or find it running) and read its applications: adoption.

        A failure is logged, not raised: jobs need no Serve, and each tick tries again.
        """
        try:
            self._proxy = await asyncio.to_thread(
                serve_control.start_serve, self.settings.serve_host, self.settings.serve_port
            )
            self._apps = await asyncio.to_thread(
                serve_control.read_apps, self.settings.serve_app_prefix
            )
        except Exception:
            _log.exception("Ray Serve could not be started; endpoints wait for it")
            return
        self._serving = True

    async def run(self) -> None:
        """Tick after tick until cancelled."""
        while True:
            try:
                await self.reconcile()
            except Exception:  # a tick must never end the loop; the next one starts over
                _log.exception("endpoint reconciliation failed")
            with suppress(TimeoutError):
                await asyncio.wait_for(self._tick.wait(), self.settings.endpoint_probe_seconds)
            self._tick.clear()

    async def close(self) -> None:
        """Release the probe's connections (applications run on, for the next gateway)."""
        await self._http.aclose()
        for waiting in self._waiters.values():
            for future in waiting:
                future.cancel()

    async def reconcile(self) -> None:
        """One tick: read Serve's applications, take every endpoint one step."""
        if not self._serving:
            await self.start()
            if not self._serving:
                return
        self._apps = await asyncio.to_thread(
            serve_control.read_apps, self.settings.serve_app_prefix
        )
        self._going &= set(self._apps)  # what Serve no longer lists is gone
        for name in list(self._deleted):
            if self._present(name):
                await self._delete(name)
            self._deleted.discard(name)
        orphans = set(self._apps) - set(self._endpoints)
        for name in orphans:  # an endpoint deleted while no gateway watched
            if self._present(name):
                await self._delete(name)
        undeploy, self._undeploy = self._undeploy, set()
        for name in undeploy:  # placed again (maybe already): a new application, next tick
            if self._present(name):
                await self._delete(name)
        steps = [e for e in self._endpoints.values() if e.name not in undeploy]
        await asyncio.gather(*(self._step(e) for e in steps))

    async def _step(self, endpoint: Endpoint) -> None:
        name = endpoint.name
        try:
            if endpoint.phase in _UNDEPLOYED:
                if self._present(name):
                    await self._delete(name)
                self._forget(name)
            elif self._stale(endpoint):
                # an earlier placement's application, not deleted before a gateway restart
                # (a node loss or an idle stop written, the deletion not yet): never adopted;
                # deleted, and the endpoint's own deployed once Serve no longer lists it
                if self._present(name):
                    await self._delete(name)
            elif endpoint.phase is EndpointPhase.DEPLOYING:
                await self._deploying(endpoint)
            elif endpoint.phase is EndpointPhase.RUNNING:
                await self._running(endpoint)
        except CrdError as error:  # moved meanwhile, or the store unreachable: next tick
            _log.info("endpoint %s: %s", name, error)

    async def _deploying(self, endpoint: Endpoint) -> None:
        name = endpoint.name
        app = self._apps.get(name)
        if name in self._going or (app is not None and app.status == "DELETING"):
            return  # an earlier run's application is still going away
        if app is None or self._moved(endpoint):
            await self._deploy(endpoint)
            return
        deployed = self._deployed.get(name)
        if deployed is None:  # adopted on boot: the deploy timeout counts from now
            self._deployed[name] = (*self._placement(endpoint), time.monotonic())
            deployed = self._deployed[name]
        if app.status == "DEPLOY_FAILED":
            await self.crd.set_endpoint_failed(name, *deploy_failure(app.message))
            await self._delete(name)
            return
        if app.status == "RUNNING" and await self._probe(name) is not None:
            await self.crd.set_endpoint_running(name, self.url(name))
            await self._write_health(name, True, app.running_replicas, "probe answered")
            return
        if time.monotonic() - deployed[2] > self.settings.endpoint_deploy_timeout_seconds:
            message = f"not running after {self.settings.endpoint_deploy_timeout_seconds:g} s"
            await self.crd.set_endpoint_failed(name, "DeployTimedOut", f"{message}: {app.message}")
            await self._delete(name)

    async def _running(self, endpoint: Endpoint) -> None:
        name = endpoint.name
        app = self._apps.get(name)
        if app is None or self._moved(endpoint):
            if app is None or app.status != "DELETING":
                await self._deploy(endpoint)  # Serve lost it (or a restart of Ray)
            await self._write_health(name, False, 0, "the Serve application is being redeployed")
            return
        seen = await self._probe(name)
        # Serve queues a request while it replaces a dead replica, so the probe alone may
        # only be slow; no running replica (or a probe past its timeout) is Unhealthy
        healthy = seen is not None and app.status == "RUNNING" and app.running_replicas > 0
        message = (
            "probe answered"
            if healthy
            else f"probe {'answered' if seen else 'failed'}; Serve: {app.status}, "
            f"{app.running_replicas} replicas running"
        )
        await self._write_health(name, healthy, app.running_replicas, message)
        if healthy and self._idle(endpoint, app):
            idle = endpoint.spec.idle_seconds
            await self.crd.set_endpoint_stopped(
                name, EndpointStopReason.IDLE, f"no request for {idle} s"
            )
            await self._delete(name)

    def _idle(self, endpoint: Endpoint, app: AppState) -> bool:
        """No request under way on any replica, and none for ``idleSeconds`` since it began
        Running (a replica that took long to become Running is not idle at once)."""
        idle_seconds = endpoint.spec.idle_seconds
        replicas = self._replicas.get(endpoint.name, {})
        if idle_seconds <= 0 or not replicas or len(replicas) < app.running_replicas:
            return False  # a replica not heard from yet may be serving
        if any(seen.in_flight > 0 for seen in replicas.values()):
            return False
        last = max(seen.last_request_at for seen in replicas.values())
        started = endpoint.status.started_at  # idle counts from Running at the earliest
        if started is not None:
            last = max(last, started.timestamp())
        return self._clock() - last >= idle_seconds

    # -- Serve -----------------------------------------------------------------------------

    def _placement(self, endpoint: Endpoint) -> tuple[str, tuple[int, ...]]:
        return endpoint.status.node or "", tuple(endpoint.status.gpu_indices)

    def _stale(self, endpoint: Endpoint) -> bool:
        """An application this gateway did not deploy, deployed before the endpoint's
        current placement (``placedAt``): it serves an earlier one."""
        app = self._apps.get(endpoint.name)
        placed = endpoint.status.placed_at
        if app is None or placed is None or endpoint.name in self._deployed:
            return False
        return 0 < app.deployed_at < placed.timestamp()

    def _moved(self, endpoint: Endpoint) -> bool:
        deployed = self._deployed.get(endpoint.name)
        return deployed is not None and deployed[:2] != self._placement(endpoint)

    async def _deploy(self, endpoint: Endpoint) -> None:
        node, indices = self._placement(endpoint)
        try:
            config = await self._configs.for_placement(endpoint, self._inventory(), node, indices)
        except ImageRefusedToOwner as refused:
            await self.crd.set_endpoint_failed(endpoint.name, IMAGE_REFUSED, str(refused))
            return
        self._replicas.pop(endpoint.name, None)
        self._deployed[endpoint.name] = (node, indices, time.monotonic())
        await asyncio.to_thread(
            serve_control.deploy_app,
            endpoint,
            config,
            node=node,
            health_check_period_s=max(1.0, self.settings.endpoint_probe_seconds),
            prefix=self.settings.serve_app_prefix,
        )
        _log.info("endpoint %s deploying on %s GPUs %s", endpoint.name, node, list(indices))

    def _present(self, name: str) -> bool:
        """An application that is there and not already going away."""
        app = self._apps.get(name)
        return app is not None and app.status != "DELETING"

    async def _delete(self, name: str) -> None:
        await asyncio.to_thread(serve_control.delete_app, name, self.settings.serve_app_prefix)
        self._going.add(name)
        self._apps.pop(name, None)
        self._forget(name)

    def _forget(self, name: str) -> None:
        self._deployed.pop(name, None)
        self._replicas.pop(name, None)
        self._health.pop(name, None)

    async def _probe(self, name: str) -> ReplicaSeen | None:
        """GET the replica's statistics through Serve's proxy (JSON, never a pickle)."""
        try:
            answer = await self._http.get(self.url(name) + STATS_PATH)
            answer.raise_for_status()
            stats = answer.json()
            seen = ReplicaSeen(
                last_request_at=float(stats["last_request_at"]),
                in_flight=int(stats["in_flight"]),
                seen_at=time.monotonic(),
            )
            replica = str(stats["replica"])[:64]
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return None
        replicas = self._replicas.setdefault(name, {})
        replicas[replica] = seen
        horizon = time.monotonic() - max(10.0, 5 * self.settings.endpoint_probe_seconds)
        for stale in [r for r, s in replicas.items() if s.seen_at < horizon]:
            del replicas[stale]  # a replica Serve replaced or scaled away
        return seen

    async def _write_health(self, name: str, healthy: bool, ready: int, message: str) -> None:
        if self._health.get(name) == (healthy, ready, message):
            return
        await self.crd.set_endpoint_health(name, healthy, message, ready_replicas=ready)
        self._health[name] = (healthy, ready, message)


def _newer(version: str | None, than: str) -> bool:
    """``version`` is later than ``than`` (etcd's versions are integers; else: another)."""
    if version is None:
        return False
    try:
        return int(version) > int(than)
    except ValueError:
        return version != than
