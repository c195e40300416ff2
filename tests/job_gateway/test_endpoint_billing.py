"""The gateway's endpoint billing against the real credit_service and metering_service:
period holds that metering places and renews, periods settled exactly once (across a
restart too), out of credits -> stopped.

The endpoints are the gateway's views (what its informer delivers); time is the billing's
clock, set by each test; money is read from credit_service's ledger.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import httpx
import pytest

from gridweave_clients.gateway.endpoints import EndpointResponse
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering.endpoint_periods import (
    ENDPOINT_FIRST_HOLDS,
    endpoint_hold_amount,
    period_key,
)
from gridweave_clients.metering.price_source import FixedPrices
from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE, price_per_gpu_second
from gridweave_controller import crd
from gridweave_controller._kube_store import KubeStore
from gridweave_controller.phases import EndpointPhase, EndpointStopReason
from job_gateway.endpoint_billing import EndpointBilling
from job_gateway.services.endpoints import endpoint_response
from platform_service.services import endpoint_figures as figures
from tests.job_gateway.metering_factories import Metering
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer
from tests.support.kubeapi import KubeAPI

pytestmark = [pytest.mark.postgres]

T = TypeVar("T")
PERIOD = 60
VRAM = 16_384
PRICE = price_per_gpu_second(DEFAULT_PRICE_TABLE, vendor="nvidia", vram_mb=VRAM)
AMD_PRICE = price_per_gpu_second(DEFAULT_PRICE_TABLE, vendor="amd", vram_mb=VRAM)
OUT_OF_CREDITS = EndpointStopReason.OUT_OF_CREDITS
SPENDING_LIMIT = EndpointStopReason.SPENDING_LIMIT
STARTED = datetime(2026, 1, 5, 12, 0, 0, 250_000, tzinfo=UTC)


def endpoint_view(owner: str, **overrides: Any) -> EndpointResponse:
    """A running endpoint on one NVIDIA GPU, one replica (its max)."""
    values: dict[str, Any] = {
        "id": f"ep-{uuid.uuid4().hex[:10]}",
        "user_id": owner,
        "owner": owner,
        "mode": "transformers",
        "phase": EndpointPhase.RUNNING,
        "url": "http://127.0.0.1:1/gw/x",
        "node": "node-a",
        "gpu_indices": [0],
        "ready_replicas": 1,
        "started_at": STARTED,
        "vram_mb": VRAM,
        "gpu_count": 1,
        "vendor": "nvidia",
        "max_replicas": 1,
        **overrides,
    }
    return EndpointResponse(**values)


def stopped(view: EndpointResponse, after_seconds: float, reason: str = "Deleted") -> Any:
    assert view.started_at is not None
    return view.model_copy(
        update={
            "phase": EndpointPhase.STOPPED,
            "reason": reason,
            "ready_replicas": 0,
            "stopped_at": view.started_at + timedelta(seconds=after_seconds),
        }
    )


class Clock:
    def __init__(self) -> None:
        self.now = STARTED.timestamp()

    def at(self, seconds: float) -> None:
        self.now = STARTED.timestamp() + seconds

    def __call__(self) -> float:
        return self.now


class World:
    """Billing instances (a new one is a restarted gateway) on the real services."""

    def __init__(self, credit: CreditServer, metering: httpx.Client) -> None:
        self.credit = credit
        self.metering = metering
        self.clock = Clock()
        self.stops: list[tuple[str, str, str]] = []

    def billing(self) -> Callable[[Callable[[EndpointBilling], Awaitable[T]]], T]:
        async def stop(endpoint_id: str, reason: str, message: str) -> None:
            self.stops.append((endpoint_id, reason, message))

        def run(scenario: Callable[[EndpointBilling], Awaitable[T]]) -> T:
            async def main() -> T:
                async with AsyncMeteringClient(
                    str(self.metering.base_url), INTERNAL_TOKEN, role="gateway"
                ) as m:
                    billing = EndpointBilling(
                        m,
                        prices=FixedPrices(DEFAULT_PRICE_TABLE),
                        stop=stop,
                        period_seconds=PERIOD,
                        clock=self.clock,
                    )
                    return await scenario(billing)

            return asyncio.run(main())

        return run

    def settle(self, *views: EndpointResponse, at: float, billing: Any = None) -> None:
        """One pass of a fresh billing (a restarted gateway) seeing ``views`` at ``at`` s."""
        self.clock.at(at)

        async def scenario(billing: EndpointBilling) -> None:
            for view in views:
                billing.observe(view)
            await billing.settle()

        self.billing()(scenario)

    def passes(self, *seen: tuple[float, EndpointResponse]) -> None:
        """One billing's passes: at each ``(at, view)`` it sees the view, then settles."""

        async def scenario(billing: EndpointBilling) -> None:
            for at, view in seen:
                self.clock.at(at)
                billing.observe(view)
                await billing.settle()

        self.billing()(scenario)

    def charged(self, user_id: str) -> int:
        """Micro-credits taken from the account (captures are the negative entries)."""
        return -sum(amount for amount in self.credit.ledger_amounts(user_id) if amount < 0)

    def records(self, user_id: str) -> list[dict[str, Any]]:
        """Every usage record of ``user_id``, from metering's API."""
        response = self.metering.get("/v1/usage", params={"user_id": user_id, "limit": 1000})
        assert response.status_code == 200, response.text
        records: list[dict[str, Any]] = response.json()["records"]
        return records

    def held(self, user_id: str) -> int:
        return int(self.credit.account(user_id)["held"])


@pytest.fixture
def world(credit: CreditServer, metering: Metering) -> World:
    return World(credit, metering.http)


def funded(world: World, amount: int = 10_000_000) -> str:
    owner = f"owner-{uuid.uuid4().hex[:8]}"
    world.credit.fund(owner, amount)
    return owner


class TestRunningEndpoint:
    def test_holds_the_running_period_and_the_next(self, world: World) -> None:
        owner = funded(world)
        world.settle(endpoint_view(owner), at=10)
        assert world.held(owner) == 2 * PERIOD * PRICE
        assert world.charged(owner) == 0

    def test_each_ended_period_is_charged_and_the_hold_renews(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner)
        world.settle(view, at=10)
        world.settle(view, at=130)  # periods 0 and 1 ended; 2 running
        assert world.charged(owner) == 2 * PERIOD * PRICE
        assert world.held(owner) == 2 * PERIOD * PRICE  # periods 2 and 3
        records = world.records(owner)
        assert sorted(r["hold_reference"] for r in records) == [
            period_key(view.id, STARTED, 0),
            period_key(view.id, STARTED, 1),
        ]
        assert {r["endpoint_id"] for r in records} == {view.id}

    def test_replicas_multiply_the_charge(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner, ready_replicas=2, max_replicas=3)
        world.settle(view, at=70)
        assert world.charged(owner) == 2 * PERIOD * PRICE
        assert world.held(owner) == 2 * 3 * PERIOD * PRICE  # holds cover max_replicas


class TestReplicasCounted:
    """One billing's passes count the replicas between them: a period is charged for the
    replica-seconds it ran, not for the replicas seen when it closed."""

    @pytest.mark.parametrize(
        ("before", "after", "changed_at", "replica_seconds"),
        [
            (1, 3, 30, 30 * 1 + 30 * 3),  # a scale-up mid-period: not 60 s at three
            (3, 1, 55, 55 * 3 + 5 * 1),  # a scale-down before the close: not 60 s at one
        ],
    )
    def test_a_change_of_replicas_charges_each_stretch_at_its_count(
        self, world: World, before: int, after: int, changed_at: int, replica_seconds: int
    ) -> None:
        owner = funded(world)
        first = endpoint_view(owner, ready_replicas=before, max_replicas=3)
        then = first.model_copy(update={"ready_replicas": after})
        world.passes((0, first), (changed_at, then), (65, then))
        (record,) = world.records(owner)
        assert record["wall_seconds"] == replica_seconds
        assert world.charged(owner) == replica_seconds * PRICE

    def test_passes_every_five_seconds_charge_whole_periods(self, world: World) -> None:
        owner = funded(world)
        two = endpoint_view(owner, ready_replicas=2, max_replicas=2)
        world.passes(*((at, two) for at in range(0, 126, 5)))
        records = world.records(owner)
        assert sorted(r["wall_seconds"] for r in records) == [120.0, 120.0]  # no float spill
        assert world.charged(owner) == 2 * 120 * PRICE

    def test_a_stop_mid_period_counts_to_the_recorded_stop(self, world: World) -> None:
        owner = funded(world)
        two = endpoint_view(owner, ready_replicas=2, max_replicas=2)
        one = two.model_copy(update={"ready_replicas": 1})
        world.passes((0, two), (20, one), (45, stopped(one, 40.5)))
        (record,) = world.records(owner)
        # 20 s at two, 20.5 s at one to the stop, and the rounded-up half second at one
        assert record["wall_seconds"] == 20 * 2 + 20.5 + 0.5
        assert world.charged(owner) == 61 * PRICE
        assert world.held(owner) == 0

    def test_a_restarted_billing_charges_what_it_did_not_see_at_the_replicas_it_sees(
        self, world: World
    ) -> None:
        owner = funded(world)
        three = endpoint_view(owner, ready_replicas=3, max_replicas=3)
        world.passes((0, three), (30, three))
        world.settle(three.model_copy(update={"ready_replicas": 1}), at=65)
        (record,) = world.records(owner)
        assert record["wall_seconds"] == 60 * 1
        assert world.charged(owner) == 60 * PRICE


class TestExactlyOnce:
    def test_a_restart_mid_period_charges_each_period_once(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner)
        world.settle(view, at=130)
        for at in (131, 150, 179):  # restarted gateways, same period
            world.settle(view, at=at)
        assert world.charged(owner) == 2 * PERIOD * PRICE
        world.settle(view, at=245)  # restarted again after two more periods ended
        assert world.charged(owner) == 4 * PERIOD * PRICE
        assert len(world.records(owner)) == 4

    def test_passes_of_one_billing_repeat_nothing(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner)

        async def scenario(billing: EndpointBilling) -> None:
            billing.observe(view)
            for at in (61, 62, 121, 121, 122):
                world.clock.at(at)
                await billing.settle()

        world.billing()(scenario)
        assert world.charged(owner) == 2 * PERIOD * PRICE

    def test_a_stop_settles_the_partial_period_once_and_frees_every_hold(
        self, world: World
    ) -> None:
        owner = funded(world)
        view = endpoint_view(owner)
        world.settle(view, at=130)
        ended = stopped(view, 150.2)
        world.settle(ended, at=151)
        world.settle(ended, at=400)  # restarted: nothing more
        assert world.charged(owner) == 151 * PRICE  # 150.2 s rounded up
        assert world.held(owner) == 0
        assert len(world.records(owner)) == 3

    def test_a_stop_seen_only_after_a_restart_is_settled_whole(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner)
        world.settle(view, at=5)
        world.settle(stopped(view, 95), at=500)
        assert world.charged(owner) == 95 * PRICE
        assert world.held(owner) == 0


class TestOutOfCredits:
    def test_an_owner_short_of_the_next_period_is_stopped(self, world: World) -> None:
        owner = funded(world, amount=PERIOD * PRICE + 5)  # one period, not two
        view = endpoint_view(owner)
        world.settle(view, at=3)
        assert world.stops == [(view.id, OUT_OF_CREDITS, world.stops[0][2])]
        assert "cannot pay" in world.stops[0][2]
        world.settle(stopped(view, 4, reason=OUT_OF_CREDITS), at=5)
        assert world.charged(owner) == 4 * PRICE  # the seconds it ran, from its one hold
        assert world.held(owner) == 0

    def test_an_owner_without_an_account_is_stopped(self, world: World) -> None:
        view = endpoint_view(f"nobody-{uuid.uuid4().hex[:8]}")
        world.settle(view, at=1)
        assert [stop[:2] for stop in world.stops] == [(view.id, OUT_OF_CREDITS)]


class TestSpendingLimit:
    def test_a_next_period_past_the_monthly_cap_stops_it_spending_limit(self, world: World) -> None:
        owner = funded(world)  # plenty of credits: only the cap stops it
        world.credit.cap_spending(owner, monthly_cap=PERIOD * PRICE * 3 // 2)
        view = endpoint_view(owner)
        world.settle(view, at=3)
        assert [stop[:2] for stop in world.stops] == [(view.id, SPENDING_LIMIT)]
        message = world.stops[0][2]
        assert f"monthly spending cap of {PERIOD * PRICE * 3 // 2}" in message
        assert f"({PERIOD * PRICE} spent this month)" in message  # the first period's hold
        assert world.held(owner) == PERIOD * PRICE
        world.settle(stopped(view, 4, reason=SPENDING_LIMIT), at=5)
        assert world.charged(owner) == 4 * PRICE
        assert world.held(owner) == 0

    def test_a_period_past_the_per_job_cap_stops_it_before_any_hold(self, world: World) -> None:
        owner = funded(world)
        world.credit.cap_spending(owner, per_job_cap=PERIOD * PRICE - 1)
        view = endpoint_view(owner)
        world.settle(view, at=1)
        assert [stop[:2] for stop in world.stops] == [(view.id, SPENDING_LIMIT)]
        assert "per-job spending cap" in world.stops[0][2]
        assert world.held(owner) == 0


class TestPlacedVendor:
    """An endpoint asking for ``any`` is billed at the vendor the gateway placed it on."""

    def test_held_and_charged_at_the_placed_vendors_price(self, world: World) -> None:
        assert AMD_PRICE < PRICE  # the placed vendor is the cheaper one
        owner = funded(world)
        view = endpoint_view(owner, vendor="any", placed_vendor="amd")
        world.settle(view, at=10)
        assert world.held(owner) == 2 * PERIOD * AMD_PRICE
        world.settle(view, at=70)
        assert world.charged(owner) == PERIOD * AMD_PRICE
        assert [r["vendor"] for r in world.records(owner)] == ["amd"]

    def test_an_unknown_placement_is_held_and_charged_at_the_dearest(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner, vendor="any")
        world.settle(view, at=70)
        assert world.charged(owner) == PERIOD * PRICE
        assert world.held(owner) == 2 * PERIOD * PRICE


class TestWhatTheOwnerReads:
    """The platform's view of an endpoint: its price and billed seconds agree with usage."""

    def test_billed_seconds_are_its_usage_records_while_it_runs(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner, ready_replicas=2, max_replicas=2)
        world.settle(view, at=130)  # periods 0 and 1 ended, of two replicas
        usage = sum(record["billed_seconds"] for record in world.records(owner))
        assert view.billed_seconds == 0  # the gateway counts finished runs only
        assert self.billed(world, view) == usage == 2 * 2 * PERIOD
        later = view.model_copy(update={"created_at": STARTED + timedelta(hours=1)})
        assert self.billed(world, later) == 0  # a redeployment of the name: its own records

    def test_metering_down_falls_back_to_the_gateways_count(self) -> None:
        async def read() -> int:
            async with AsyncMeteringClient("http://127.0.0.1:9", INTERNAL_TOKEN) as down:
                view = endpoint_view("x").model_copy(update={"billed_seconds": 7})
                return await figures.billed_seconds(down, view)

        assert asyncio.run(read()) == 7

    def test_the_price_never_turns_into_another_number_once_it_runs(self) -> None:
        pending = endpoint_view("x", vendor="any", phase=EndpointPhase.PENDING)
        running = endpoint_view("x", vendor="any", placed_vendor="amd")
        unplaced_running = endpoint_view("x", vendor="any")
        assert figures.price_per_second(DEFAULT_PRICE_TABLE, pending) is None
        assert figures.price_per_second(DEFAULT_PRICE_TABLE, running) == AMD_PRICE
        assert figures.price_per_second(DEFAULT_PRICE_TABLE, unplaced_running) == PRICE
        for view in (pending, running):
            assert figures.max_price_per_second(DEFAULT_PRICE_TABLE, view) == PRICE
        nvidia = endpoint_view("x", phase=EndpointPhase.PENDING)
        assert figures.price_per_second(DEFAULT_PRICE_TABLE, nvidia) == PRICE

    @staticmethod
    def billed(world: World, view: EndpointResponse) -> int:
        async def read() -> int:
            url = str(world.metering.base_url)
            async with AsyncMeteringClient(url, INTERNAL_TOKEN, role="platform") as metering:
                return await figures.billed_seconds(metering, view)

        return asyncio.run(read())


class TestRecordedStop:
    """A run billing never saw end is billed to its recorded stop, not to the pass."""

    def test_a_stop_seen_late_ends_at_its_recorded_stop(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner)

        async def scenario(billing: EndpointBilling) -> None:
            world.clock.at(10)
            billing.observe(view)
            await billing.settle()
            # billing saw nothing (metering unreachable) while the endpoint stopped idle at
            # 70.2 s; it sees the stop at 600 s
            world.clock.at(600)
            billing.observe(stopped(view, 70.2, reason="Idle"))
            await billing.settle()

        world.billing()(scenario)
        assert world.charged(owner) == 71 * PRICE
        assert world.held(owner) == 0

    def test_a_restarted_billing_settles_the_run_once_at_its_own_vendors_price(
        self, world: World
    ) -> None:
        owner = funded(world)
        view = endpoint_view(owner, vendor="any", placed_vendor="amd")
        world.settle(view, at=65)  # period 0 charged; 1 and 2 held
        later = stopped(view, 100, reason="Idle")
        world.settle(later, at=310)  # a restarted billing
        world.settle(later, at=320)
        assert world.charged(owner) == 100 * AMD_PRICE
        assert world.held(owner) == 0


class TestFirstHolds:
    def test_what_a_deploy_checks_is_what_the_first_holds_take(self, world: World) -> None:
        view = endpoint_view("x", vendor="any", max_replicas=3, ready_replicas=1)
        needed = endpoint_hold_amount(
            DEFAULT_PRICE_TABLE,
            vendor="any",
            vram_mb=VRAM,
            gpu_count=1,
            max_replicas=3,
            period_seconds=PERIOD,
            periods=ENDPOINT_FIRST_HOLDS,
        )
        owner = funded(world, amount=needed)
        world.settle(view.model_copy(update={"user_id": owner, "owner": owner}), at=1)
        assert world.stops == []
        assert world.held(owner) == needed == 2 * 3 * PERIOD * PRICE


class TestReplacedEndpoint:
    def test_the_old_run_is_settled_once_and_never_with_the_new_endpoint(
        self, world: World
    ) -> None:
        owner = funded(world)
        old = endpoint_view(owner, vram_mb=VRAM)
        new = endpoint_view(
            owner,
            id=old.id,
            vram_mb=2 * VRAM,
            started_at=STARTED + timedelta(seconds=200),
            node="node-b",
        )

        async def scenario(billing: EndpointBilling) -> None:
            world.clock.at(30)
            billing.observe(old)
            await billing.settle()
            world.clock.at(150)  # a deploy of its name: the stopped endpoint replaced
            await billing.settle_replaced(stopped(old, 90))
            world.clock.at(150)
            billing.observe(old)  # a listing from before the replacement, late
            await billing.settle()
            world.clock.at(265)
            billing.observe(new)
            await billing.settle()

        world.billing()(scenario)
        records = world.records(owner)
        old_keys = {period_key(old.id, STARTED, i) for i in range(3)}
        mine = [r for r in records if r["hold_reference"] in old_keys]
        assert sorted(r["wall_seconds"] for r in mine) == [30.0, 60.0]  # 90 s, once
        assert {r["vram_mb"] for r in mine} == {VRAM}
        theirs = [r for r in records if r not in mine]
        assert [(r["vram_mb"], r["node"]) for r in theirs] == [(2 * VRAM, "node-b")]
        new_price = price_per_gpu_second(DEFAULT_PRICE_TABLE, vendor="nvidia", vram_mb=2 * VRAM)
        assert world.charged(owner) == 90 * PRICE + PERIOD * new_price
        assert world.held(owner) == 2 * PERIOD * new_price


class TestRunsNoLongerCurrent:
    """Every hold billing placed ends settled or released, whatever it missed."""

    def sweep(self, world: World, *views: EndpointResponse, at: float) -> None:
        """One pass of a fresh billing (a restarted gateway) listing ``views``."""
        world.clock.at(at)

        async def listing() -> list[EndpointResponse]:
            return list(views)

        async def scenario(billing: EndpointBilling) -> None:
            await billing.billing_pass(listing)

        world.billing()(scenario)

    def test_a_deleted_endpoints_holds_are_released(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner)
        world.settle(view, at=130)  # periods 0 and 1 charged; 2 and 3 held
        assert world.held(owner) == 2 * PERIOD * PRICE
        self.sweep(world, at=200)  # the endpoint is gone from the listing
        assert world.held(owner) == 0
        assert world.charged(owner) == 2 * PERIOD * PRICE

    def test_a_run_that_just_started_is_left_to_a_later_pass(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner)
        world.settle(view, at=5)
        self.sweep(world, at=30)  # a listing that lags the run: its holds stand
        assert world.held(owner) == 2 * PERIOD * PRICE


def lost_node(view: EndpointResponse, after_seconds: float) -> Any:
    """``view`` Pending again after its node was lost: node and GPUs cleared, the run
    ended at the loss (its replicas last probed kept as ``run_replicas``)."""
    assert view.started_at is not None
    return view.model_copy(
        update={
            "phase": EndpointPhase.PENDING,
            "reason": "NodeLost",
            "node": None,
            "gpu_indices": [],
            "ready_replicas": 0,
            "run_replicas": view.ready_replicas,
            "stopped_at": view.started_at + timedelta(seconds=after_seconds),
        }
    )


class TestEndedRunRecorded:
    """A run that ended is recorded as it ran."""

    def test_a_run_a_node_loss_ended_on_the_node_it_lost(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner, max_replicas=2, ready_replicas=2, gpu_indices=[1])
        world.passes((50, view), (150, lost_node(view, 100)))
        records = world.records(owner)
        assert sorted(r["wall_seconds"] for r in records) == [40.0 * 2, 60.0 * 2]
        assert {(r["node"], tuple(r["gpu_indices"])) for r in records} == {("node-a", (1,))}
        assert world.charged(owner) == 100 * 2 * PRICE
        assert world.held(owner) == 0

    def test_a_restarted_billing_that_sees_only_the_loss_prices_the_runs_replicas(
        self, world: World
    ) -> None:
        owner = funded(world)
        view = endpoint_view(owner, max_replicas=3, ready_replicas=3, gpu_indices=[2])
        world.settle(view, at=65)  # period 0 charged at 3 replicas
        world.settle(lost_node(view, 100), at=150)  # restarted: the loss is all it sees
        assert sorted(r["wall_seconds"] for r in world.records(owner)) == [40.0 * 3, 60.0 * 3]
        assert world.charged(owner) == 100 * 3 * PRICE
        assert world.held(owner) == 0

    def test_a_hold_beyond_the_recorded_stop_is_released(self, world: World) -> None:
        owner = funded(world)
        view = endpoint_view(owner)
        # billing's clock ahead of the gateway's: periods 0 and 1 charged, 2 and 3 held
        world.clock.at(130)

        async def listing() -> list[EndpointResponse]:
            return [stopped(view, 50)]  # the gateway recorded the stop at 50 s

        async def scenario(billing: EndpointBilling) -> None:
            billing.observe(view)
            await billing.settle()
            # ended in period 0: 1 and 2 released as placed ahead, 3 (beyond) as no
            # longer current; a second pass moves nothing
            await billing.billing_pass(listing)
            assert world.held(owner) == 0
            await billing.billing_pass(listing)

        world.billing()(scenario)
        assert world.charged(owner) == 2 * PERIOD * PRICE  # the first record of each stands
        assert world.held(owner) == 0


class TestRunsSettledBeforePlacement:
    """The gateway settles each run before the placement that clears it from the status
    (the real apiserver: the status keeps one run at a time)."""

    def test_three_runs_are_each_charged_their_seconds(
        self,
        world: World,
        kubeapi: KubeAPI,
        kube_namespace: str,
        request: pytest.FixtureRequest,
    ) -> None:
        owner = funded(world)
        api = crd.init_k8s_client(kubeconfig=kubeapi.kubeconfig, namespace=kube_namespace)
        assert isinstance(api.store, KubeStore)
        request.addfinalizer(api.store.close)
        name = f"ep-{uuid.uuid4().hex[:10]}"
        api.create_endpoint(name, owner, vram_mb=VRAM, model="m", vendor="nvidia")

        async def scenario(billing: EndpointBilling) -> None:
            for node in ("node-a", "node-b", "node-c", "node-d"):
                ended = api.get_endpoint(name)
                if ended.status.started_at is not None:  # what the scheduling loop does
                    world.clock.now = time.time()
                    await billing.settle_replaced(endpoint_response(ended))
                api.set_endpoint_deploying(name, node, [0], "nvidia")
                api.set_endpoint_running(name, f"http://{node}:9000")
                billing.observe(endpoint_response(api.set_endpoint_health(name, True, "ok", 1)))
                time.sleep(0.01)
                if node != "node-d":
                    api.set_endpoint_stopped(name, EndpointStopReason.IDLE, "no request")

        world.billing()(scenario)
        current = api.get_endpoint(name)
        assert current.status.started_at is not None and current.status.stopped_at is None
        # every replaced run charged its seconds, exactly what the gateway counted, once
        assert current.status.billed_seconds >= 3
        assert world.charged(owner) == current.status.billed_seconds * PRICE
        assert {r["node"] for r in world.records(owner)} == {"node-a", "node-b", "node-c"}
        since = current.status.started_at.timestamp() - STARTED.timestamp()
        world.settle(endpoint_response(current), at=since + 10)  # a restarted billing
        assert world.charged(owner) == current.status.billed_seconds * PRICE
        assert world.held(owner) == 2 * PERIOD * PRICE  # the current run's two periods


class TestReleaseRacesARecord:
    """One gateway releases the holds of a run no view names while another, which still
    follows that run, records its periods: each period's money moves once, by whichever
    came first, and a record that came second is refused as ``hold_closed``."""

    ROUNDS = 6

    def race(self, world: World, owner: str, *, release_first: bool) -> EndpointResponse:
        view = endpoint_view(owner)
        world.settle(view, at=10)  # periods 0 and 1 held, by a billing gone since
        ended = stopped(view, 90)

        async def nothing_listed() -> list[EndpointResponse]:
            return []  # the endpoint deleted: its run is named nowhere

        async def stop(endpoint_id: str, reason: str, message: str) -> None:
            world.stops.append((endpoint_id, reason, message))

        async def scenario(releaser: EndpointBilling) -> None:
            world.clock.at(200)
            recorder = EndpointBilling(
                releaser.metering,
                prices=FixedPrices(DEFAULT_PRICE_TABLE),
                stop=stop,
                period_seconds=PERIOD,
                clock=world.clock,
            )
            recorder.observe(ended)  # the other gateway saw the stop at 90 s
            if release_first:
                await releaser.billing_pass(nothing_listed)
                await recorder.settle()
            else:
                await asyncio.gather(releaser.billing_pass(nothing_listed), recorder.settle())

        world.billing()(scenario)
        return view

    def check_moved_once(self, world: World, owner: str) -> list[dict[str, Any]]:
        records = world.records(owner)
        settled = [r for r in records if r["settlement"]["state"] == "settled"]
        refused = [r for r in records if r not in settled]
        assert {r["settlement"]["error_code"] for r in refused} <= {"hold_closed"}
        assert all(r["settlement"]["charged"] is None for r in refused)
        # every hold closed; the money moved is exactly what the settled records charged
        assert world.held(owner) == 0
        assert world.charged(owner) == sum(r["settlement"]["charged"] for r in settled)
        return records

    def test_a_record_after_the_release_is_refused_cleanly_and_charges_nothing(
        self, world: World
    ) -> None:
        owner = funded(world)
        self.race(world, owner, release_first=True)
        records = self.check_moved_once(world, owner)
        assert [r["settlement"]["error_code"] for r in records] == ["hold_closed"] * 2
        assert world.charged(owner) == 0

    def test_concurrent_release_and_record_move_each_period_once(self, world: World) -> None:
        owners = [funded(world) for _ in range(self.ROUNDS)]
        for owner in owners:
            self.race(world, owner, release_first=False)
            self.check_moved_once(world, owner)
