"""The gateway bills its endpoints itself: fed by its endpoint informer, with metering
holding each period and credit_service's ledger showing the money; no platform anywhere.

The real gateway (direct to the real apiserver, no Ray: the test writes the reconciler's
Running), metering on PostgreSQL and credit_service over HTTP; billing periods of 2 s.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gridweave_clients.metering.endpoint_periods import endpoint_hold_amount
from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE, price_per_gpu_second
from gridweave_controller.models import Endpoint
from gridweave_controller.phases import EndpointPhase
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway
from tests.job_gateway.metering_factories import FUNDS, Metering, funded_user
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

PERIOD = 2
VRAM = 1024
PRICE = price_per_gpu_second(DEFAULT_PRICE_TABLE, vendor="nvidia", vram_mb=VRAM)
PERIOD_HOLD = endpoint_hold_amount(
    DEFAULT_PRICE_TABLE,
    vendor="nvidia",
    vram_mb=VRAM,
    gpu_count=1,
    max_replicas=1,
    period_seconds=PERIOD,
)
#: the gateway calls metering with the deployment's one token, as the tests' services do
SHARED_TOKEN = {"service_token": INTERNAL_TOKEN}


def billing_gateway(
    kubeapi: KubeAPI, tmp_path: Path, metering_url: str, *, interval: float, **settings: Any
) -> Any:
    return running_gateway(
        kubeapi,
        tmp_path,
        metering_service_url=metering_url,
        endpoint_billing_seconds=PERIOD,
        endpoint_billing_interval_seconds=interval,
        **SHARED_TOKEN,
        **settings,
    )


@pytest.fixture
def gateway(kubeapi: KubeAPI, metering: Metering, tmp_path: Path) -> Iterator[GatewayServer]:
    """A gateway billing every 0.2 s."""
    with billing_gateway(kubeapi, tmp_path, metering.url, interval=0.2) as server:
        yield server


def running_endpoint(gateway: GatewayServer, owner: str) -> Endpoint:
    """An endpoint placed by the gateway's scheduling loop and Running (the reconciler's
    write, made by the test: no Serve here)."""
    name = f"ep-{uuid.uuid4().hex[:8]}"
    gateway.crd.create_endpoint(
        name, owner, vram_mb=VRAM, vendor="nvidia", function_ref="fn/ep.pkl", max_replicas=1
    )
    wait_until(
        lambda: gateway.crd.get_endpoint(name).phase is EndpointPhase.DEPLOYING,
        what="placed",
    )
    return gateway.crd.set_endpoint_running(name, f"http://127.0.0.1:1/gw/{name}")


def charged(metering: Metering, owner: str) -> int:
    return -sum(a for a in metering.credit.ledger_amounts(owner) if a < 0)


def settled_to_its_stop(metering: Metering, owner: str, ended: Endpoint) -> list[dict[str, Any]]:
    """Check that ``ended``'s run was charged its seconds to its recorded stop, once, with
    no hold left; its usage records."""
    started, stopped = ended.status.started_at, ended.status.stopped_at
    assert started is not None and stopped is not None
    ran = math.ceil((stopped - started).total_seconds())
    records = metering.records(owner)
    assert sum(r["billed_seconds"] for r in records) == ran
    assert metering.credit.account(owner)["held"] == 0
    assert charged(metering, owner) == ran * PRICE
    return records


class TestTheGatewayBills:
    def test_a_running_endpoint_is_held_recorded_and_settled_to_its_stop(
        self, gateway: GatewayServer, metering: Metering
    ) -> None:
        owner = funded_user(metering)
        endpoint = running_endpoint(gateway, owner)
        wait_until(
            lambda: metering.credit.account(owner)["held"] == 2 * PERIOD_HOLD,
            what="the running period and the next held",
        )
        wait_until(lambda: len(metering.records(owner)) >= 1, what="a period recorded")
        stopped = gateway.crd.set_endpoint_stopped(endpoint.name, "Deleted", "by the test")
        wait_until(lambda: metering.credit.account(owner)["held"] == 0, what="all settled")
        assert stopped.status.started_at is not None and stopped.status.stopped_at is not None
        ran = (stopped.status.stopped_at - stopped.status.started_at).total_seconds()
        records = metering.records(owner)
        assert {r["endpoint_id"] for r in records} == {endpoint.name}
        assert sum(r["billed_seconds"] for r in records) == math.ceil(ran)
        assert charged(metering, owner) == math.ceil(ran) * PRICE
        assert metering.credit.account(owner)["balance"] == FUNDS - math.ceil(ran) * PRICE

    def test_an_owner_who_cannot_pay_the_next_period_is_stopped_by_the_gateway(
        self, gateway: GatewayServer, metering: Metering
    ) -> None:
        owner = f"owner-{uuid.uuid4().hex[:8]}"
        metering.credit.fund(owner, 2 * PERIOD_HOLD)  # the first two periods, no third
        endpoint = running_endpoint(gateway, owner)
        wait_until(
            lambda: gateway.crd.get_endpoint(endpoint.name).phase is EndpointPhase.STOPPED,
            what="stopped",
            timeout=30,
        )
        status = gateway.crd.get_endpoint(endpoint.name).status
        assert status.reason == "OutOfCredits"
        assert f"the owner {owner} cannot pay the next billing period" in (status.message or "")
        wait_until(lambda: metering.credit.account(owner)["held"] == 0, what="all settled")
        assert charged(metering, owner) <= 2 * PERIOD_HOLD


class TestReplacingAStoppedEndpoint:
    def test_its_last_run_is_settled_before_the_new_one_is_created(
        self, kubeapi: KubeAPI, metering: Metering, tmp_path: Path
    ) -> None:
        owner = funded_user(metering)
        # one pass on start, then none for an hour: only the replace settles the run
        with billing_gateway(kubeapi, tmp_path, metering.url, interval=3600) as gateway:
            endpoint = running_endpoint(gateway, owner)
            stopped = gateway.crd.set_endpoint_stopped(endpoint.name, "Deleted", "by the test")
            assert metering.records(owner) == []
            answer = gateway.http.post("/v1/endpoints", json=replacing(endpoint, owner))
            assert answer.status_code == 201, answer.text
            assert answer.json()["phase"] == "Pending"
        settled_to_its_stop(metering, owner, stopped)

    def test_metering_unreachable_refuses_the_replace_and_keeps_the_old(
        self, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        with billing_gateway(kubeapi, tmp_path, "http://127.0.0.1:9", interval=3600) as gateway:
            endpoint = running_endpoint(gateway, "owner-x")
            gateway.crd.set_endpoint_stopped(endpoint.name, "Deleted", "by the test")
            answer = gateway.http.post("/v1/endpoints", json=replacing(endpoint, "owner-x"))
            assert answer.status_code == 503, answer.text
            assert answer.json()["error"]["code"] == "billing_unavailable"
            kept = gateway.crd.get_endpoint(endpoint.name)
            assert kept.phase is EndpointPhase.STOPPED
            assert kept.metadata.uid == endpoint.metadata.uid


class TestPlacingAnEndpointThatRan:
    """The scheduling loop settles an endpoint's last run before its placement clears it
    from the status (no run history is kept there)."""

    def test_a_woken_endpoints_last_run_is_settled_before_it_is_placed(
        self, kubeapi: KubeAPI, metering: Metering, tmp_path: Path
    ) -> None:
        owner = funded_user(metering)
        # one pass on start, then none for an hour: only the placement settles the run
        with billing_gateway(kubeapi, tmp_path, metering.url, interval=3600) as gateway:
            endpoint = running_endpoint(gateway, owner)
            stopped = gateway.crd.set_endpoint_stopped(endpoint.name, "Idle", "no request")
            assert metering.records(owner) == []
            woken = gateway.http.post(f"/v1/endpoints/{endpoint.name}/wake")
            assert woken.status_code == 200, woken.text
            wait_until(
                lambda: gateway.crd.get_endpoint(endpoint.name).phase is EndpointPhase.DEPLOYING,
                what="placed again",
            )
            placed = gateway.crd.get_endpoint(endpoint.name)
        assert placed.status.started_at is None  # the status keeps no earlier run
        settled_to_its_stop(metering, owner, stopped)

    def test_a_run_lost_with_its_node_is_billed_where_it_ran_before_it_is_placed_again(
        self, kubeapi: KubeAPI, metering: Metering, tmp_path: Path
    ) -> None:
        owner = funded_user(metering)
        with billing_gateway(kubeapi, tmp_path, metering.url, interval=3600) as gateway:
            endpoint = running_endpoint(gateway, owner)
            ran_on = (endpoint.status.node, list(endpoint.status.gpu_indices))
            # what the node-loss watch writes: the node and GPUs leave the status
            lost = gateway.crd.set_endpoint_pending(endpoint.name, "NodeLost", "node gone")
            assert lost.status.node is None and lost.status.stopped_at is not None
            wait_until(
                lambda: gateway.crd.get_endpoint(endpoint.name).phase is EndpointPhase.DEPLOYING,
                what="placed again",
            )
        records = settled_to_its_stop(metering, owner, lost)
        assert {(r["node"], tuple(r["gpu_indices"])) for r in records} == {
            (ran_on[0], tuple(ran_on[1]))
        }

    def test_metering_unreachable_keeps_an_endpoint_that_ran_waiting(
        self, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        unreachable = "http://127.0.0.1:9"
        with billing_gateway(
            kubeapi, tmp_path, unreachable, interval=3600, pass_interval_seconds=0.5
        ) as gateway:
            endpoint = running_endpoint(gateway, "owner-x")
            lost = gateway.crd.set_endpoint_pending(endpoint.name, "NodeLost", "node gone")
            time.sleep(3)  # a pass every 0.5 s: none places it
            kept = gateway.crd.get_endpoint(endpoint.name)
            assert kept.phase is EndpointPhase.PENDING
            assert kept.status.started_at == lost.status.started_at  # its run, still unbilled


def replacing(endpoint: Endpoint, owner: str) -> dict[str, Any]:
    """The create body that replaces ``endpoint`` (ended) with a new one of its name."""
    return {
        "endpoint_id": endpoint.name,
        "user_id": owner,
        "vram_mb": VRAM,
        "vendor": "nvidia",
        "function_ref": "fn/ep.pkl",
        "mode": "custom",
        "replace_ended": True,
    }
