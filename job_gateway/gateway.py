"""The gateway's moving parts, owned by one event loop: CRD client, informers, scheduler.

:class:`Gateway` is created by the app when it starts serving and stopped when it stops.
Everything runs on the server's event loop (routes are ``async``), so the allocation map
and the scheduler, which are not thread-safe, have one owner. Nothing here is state of its
own: the informers list the GridweaveJobs and GridweaveEndpoints and watch them, and the
allocation map and the waiting jobs are rebuilt from what they deliver, so a restarted
gateway starts from exactly what the CRDs say.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress

from prometheus_client import CollectorRegistry

from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.platform import AsyncPlatformClient
from gridweave_controller.informer import AsyncInformer
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.operations import AsyncClientBase
from gridweave_controller.phases import JobPhase
from gridweave_runtime.storage import ObjectStore
from job_gateway.collector import collector_paused
from job_gateway.endpoint_billing import InformedBilling
from job_gateway.endpoints import EndpointReconciler, EndpointSettings
from job_gateway.execution import ExecutionSettings, Executor, connect_gateway_ray
from job_gateway.execution.image_pulls import PullTokens
from job_gateway.finish_waiters import FinishWaiters
from job_gateway.inventory import Gpu, Inventory, InventoryError, InventorySource
from job_gateway.metrics import GatewayMetrics
from job_gateway.node_loss import NodeLossWatch
from job_gateway.quotas import QuotaBook
from job_gateway.scheduler import AllocationMap, Scheduler
from job_gateway.scheduling import PassReport, SchedulingLoop
from job_gateway.settings import GatewaySettings
from job_gateway.usage import ReportPolicy, UsageReporter

__all__ = ["Gateway"]

_log = logging.getLogger(__name__)
#: How long the informers may take to list the CRDs before the gateway gives up starting.
SYNC_TIMEOUT_S = 120.0


class Gateway:
    """What the routes and the background loops share."""

    def __init__(
        self,
        settings: GatewaySettings,
        *,
        crd: AsyncClientBase,
        inventory_source: InventorySource,
        store: ObjectStore,
        execution: ExecutionSettings | None = None,
        metering: AsyncMeteringClient | None = None,
        metrics: GatewayMetrics | None = None,
        endpoint_settings: EndpointSettings | None = None,
    ) -> None:
        """``metering`` None: no usage is reported and no endpoint billed (benchmarks);
        ``metrics`` None: a registry of its own; ``endpoint_settings`` None: read from the
        environment (endpoints are served on Ray Serve when jobs are executed and
        ``GATEWAY_SERVE_ENDPOINTS`` allows)."""
        self.settings = settings
        self.crd = crd
        self.inventory_source = inventory_source
        self.store = store
        self.allocations = AllocationMap()
        self.scheduler = Scheduler(
            Inventory(),
            self.allocations,
            policy=settings.scheduling_policy,
            aging_s=settings.aging_seconds,
        )
        self.loop = SchedulingLoop(
            crd,
            self.scheduler,
            pass_interval=settings.pass_interval_seconds,
            max_parallel_writes=settings.max_parallel_writes,
        )
        self.metrics = metrics or GatewayMetrics(CollectorRegistry())
        self.loop.on_pass(self._pass_done)
        self.usage: UsageReporter | None = None
        if metering is not None:
            self.usage = UsageReporter(
                crd,
                metering,
                lookup_gpu=self._gpu,
                metrics=self.metrics,
                policy=ReportPolicy(
                    concurrency=settings.usage_report_concurrency,
                    timeout=settings.usage_report_timeout_seconds,
                    max_backoff=settings.usage_retry_max_seconds,
                ),
            )
        # execution on Ray: off unless asked for (the app asks, from GATEWAY_EXECUTE_JOBS)
        self.execution = execution or ExecutionSettings(execute_jobs=False)
        self.executor: Executor | None = None
        pull_tokens = _pull_tokens(settings) if self.execution.execute_jobs else None
        if self.execution.execute_jobs:
            self.executor = Executor(
                crd,
                settings.storage_config(),
                inventory=lambda: self.scheduler.inventory,
                poll_seconds=self.execution.executor_poll_seconds,
                start_timeout=self.execution.worker_start_timeout_seconds,
                warm=self.execution.warm,
                sandbox=self.execution.sandbox.config(),
                pull_tokens=pull_tokens,
            )
        self.endpoint_settings = endpoint_settings or EndpointSettings()
        self.reconciler: EndpointReconciler | None = None
        if self.executor is not None and self.endpoint_settings.serve_endpoints:
            self.reconciler = EndpointReconciler(
                crd,
                self.endpoint_settings,
                storage=settings.storage_config(),
                inventory=lambda: self.scheduler.inventory,
                serve_key=settings.serve_key(),
                sandbox=self.execution.sandbox.config(),
                pull_tokens=pull_tokens,
            )
        self.node_loss = NodeLossWatch(
            crd,
            grace_s=settings.node_lost_grace_seconds,
            hand_over=None if self.executor is None else self.executor.node_lost,
            max_parallel=settings.max_parallel_writes,
        )
        self.jobs: AsyncInformer[Job] = AsyncInformer(
            lambda known: crd.watch_jobs(known=known),
            on_add=self._job_changed,
            on_update=self._job_updated,
            on_delete=self._job_deleted,
        )
        self.endpoints: AsyncInformer[Endpoint] = AsyncInformer(
            lambda known: crd.watch_endpoints(known=known),
            on_add=self._endpoint_changed,
            on_update=lambda _old, new: self._endpoint_changed(new),
            on_delete=self._endpoint_deleted,
        )
        self.endpoint_billing: InformedBilling | None = None
        if metering is not None and settings.endpoint_billing_interval_seconds > 0:
            self.endpoint_billing = InformedBilling(
                crd, metering, settings, informed=self.endpoints.list
            )
            self.loop.settle_before_placing(self.endpoint_billing.settle_before_placing)
        self.quotas = QuotaBook(self.jobs, self.endpoints)
        self.finish_waiters = FinishWaiters()
        if self.executor is not None:
            # the gateway's own writes, handed on before the informer brings them back
            self.loop.on_allocated(self.executor.job_changed)
            self.executor.on_finished(self.finish_waiters.job_changed)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Read the inventory, list the CRDs (rebuilding the map), then schedule."""
        inventory = await self._read_inventory()
        self.scheduler.set_inventory(inventory)
        if self.executor is not None:  # before the informers: their first list adopts work
            await asyncio.to_thread(
                connect_gateway_ray,
                self.settings.ray_address,
                self.execution,
                state_dir=self.settings.state_dir,
                inventory=inventory,
            )
        with collector_paused():  # the first lists build millions of acyclic objects
            self.jobs.start()
            self.endpoints.start()
            synced = await asyncio.gather(
                self.jobs.wait_until_synced(SYNC_TIMEOUT_S),
                self.endpoints.wait_until_synced(SYNC_TIMEOUT_S),
            )
        if not all(synced):
            await self.stop()
            raise RuntimeError("the job gateway could not list the GridweaveJobs and Endpoints")
        self._tasks.append(asyncio.create_task(self._refresh_inventory(), name="inventory"))
        self._tasks.append(asyncio.create_task(self.loop.run(), name="scheduling"))
        if self.executor is not None:
            self.executor.start()
        if self.usage is not None:
            self._tasks.append(asyncio.create_task(self.usage.run(), name="usage"))
        if self.endpoint_billing is not None:
            task = asyncio.create_task(self.endpoint_billing.run(), name="endpoint-billing")
            self._tasks.append(task)
        if self.reconciler is not None:  # starts (or finds) Serve first, off the start path
            self._tasks.append(asyncio.create_task(self.reconciler.run(), name="endpoints"))

    def healthy(self) -> bool:
        """Both informers have listed, and no background loop has ended (any thread)."""
        return (
            bool(self._tasks)
            and self.jobs.has_synced
            and self.endpoints.has_synced
            and not any(task.done() for task in self._tasks)
        )

    async def stop(self) -> None:
        """Stop the loops and the informers."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with suppress(asyncio.CancelledError):
                await task
        await self.jobs.stop()
        await self.endpoints.stop()
        if self.executor is not None:  # its workers run on, for the next gateway
            await self.executor.stop()
        if self.reconciler is not None:  # the Serve applications run on, likewise
            await self.reconciler.close()
        self.metrics.close()
        self.scheduler.close()

    # -- informer handlers ------------------------------------------------------------------

    def _job_updated(self, old: Job, new: Job) -> None:
        if new.phase is JobPhase.PENDING and new.status.attempts > old.status.attempts:
            # sent back to Pending by whoever did it (the executor, a restart, an operator)
            self.metrics.requeued()
        self._job_changed(new)

    def _job_changed(self, job: Job) -> None:
        if self.allocations.apply_job(job):
            self.loop.poke()  # VRAM moved: waiting jobs may fit now
        self.loop.follow(job)
        if self.executor is not None:
            self.executor.job_changed(job)
        if self.usage is not None:
            self.usage.follow(job)
        self.finish_waiters.job_changed(job)

    def _job_deleted(self, job: Job) -> None:
        if self.allocations.remove(("job", job.name)):
            self.loop.poke()
        self.loop.forget(job.name)
        if self.executor is not None:
            self.executor.job_deleted(job)
        self.finish_waiters.job_deleted(job)

    def _endpoint_changed(self, endpoint: Endpoint) -> None:
        if self.allocations.apply_endpoint(endpoint):
            self.loop.poke()
        self.loop.follow_endpoint(endpoint)
        if self.reconciler is not None:
            self.reconciler.endpoint_changed(endpoint)
        if self.endpoint_billing is not None:
            self.endpoint_billing.endpoint_changed(endpoint)

    def _endpoint_deleted(self, endpoint: Endpoint) -> None:
        if self.allocations.remove(("endpoint", endpoint.name)):
            self.loop.poke()
        self.loop.forget_endpoint(endpoint.name)
        if self.reconciler is not None:
            self.reconciler.endpoint_deleted(endpoint)

    async def settle_replaced_endpoint(self, endpoint: Endpoint) -> None:
        """Bill an ended endpoint's last run to its end before a deploy replaces it."""
        if self.endpoint_billing is not None:
            await self.endpoint_billing.settle_replaced(endpoint)

    async def endpoint_settled(
        self, endpoint_id: str, timeout: float, after: str | None = None
    ) -> None:
        """Wait until the endpoint runs, has failed or is gone (at most ``timeout`` s), as
        seen in a copy later than resourceVersion ``after``."""
        if self.reconciler is not None:
            await self.reconciler.wait_until_settled(endpoint_id, timeout, after=after)

    def _pass_done(self, report: PassReport) -> None:
        self.metrics.observe_pass(report, waiting=self.loop.waiting(), scheduler=self.scheduler)

    def _gpu(self, node: str, index: int) -> Gpu | None:
        known = self.scheduler.inventory.node(node)
        return None if known is None else next((g for g in known.gpus if g.index == index), None)

    # -- inventory --------------------------------------------------------------------------

    async def _read_inventory(self) -> Inventory:
        # the sources block (NVML, a file, an HTTP call): off the loop
        return await asyncio.to_thread(self.inventory_source.read_inventory)

    async def _refresh_inventory(self) -> None:
        while True:
            await asyncio.sleep(self.settings.inventory_refresh_seconds)
            try:
                inventory = await self._read_inventory()
            except InventoryError:
                _log.warning("inventory unavailable; keeping the last one", exc_info=True)
                continue
            current = self.scheduler.inventory
            if inventory != current:
                self.scheduler.set_inventory(inventory)
                if not inventory.same_capacity(current):  # a new reading alone places nothing
                    self.loop.poke()
            # requeues are counted by the job informer (_job_updated), like every requeue
            await self.node_loss.check(inventory, self.jobs.list(), self.endpoints.list())


def _pull_tokens(settings: GatewaySettings) -> PullTokens | None:
    """How the nodes pull jobs' own images (None without a service token to ask with)."""
    token = settings.service_token
    if token is None or not token.get_secret_value():
        return None
    return PullTokens(
        AsyncPlatformClient(settings.platform_url, token.get_secret_value()),
        registry=settings.registry_address,
        plain_http=not settings.registry_tls,
    )
