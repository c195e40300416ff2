"""The metering client (gridweave_clients.metering) against the real metering_service."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from gridweave_clients import InvalidRequest, NotFound
from gridweave_clients.metering import MeteringClient
from gridweave_clients.metering.models import RecordUsageRequest
from tests.metering_service.factories import unique, usage_body
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer


def test_record_read_list_and_settle_through_the_client(
    metering: httpx.Client, credit: CreditServer
) -> None:
    user_id, job_id = unique("user"), unique("job")
    credit.fund(user_id, 10_000_000)
    hold_id = credit.place_hold(user_id, 1_000_000, reference=job_id)
    request = RecordUsageRequest.model_validate(usage_body(job_id, user_id, wall_seconds=9.2))
    with MeteringClient(str(metering.base_url), INTERNAL_TOKEN) as client:
        recorded = client.record_usage(request)
        replayed = client.record_usage(request)
        read = client.get_usage(recorded.id)
        settled = client.settle_usage(recorded.id)
        page = client.list_usage(
            user_id, period_from=datetime.now(UTC) - timedelta(hours=1), limit=10
        )
        with pytest.raises(NotFound) as missing:
            client.get_usage(2**62)

    assert (recorded.billed_seconds, recorded.cost) == (10, 1_700)
    assert recorded.settlement.state == "settled"
    assert replayed == recorded == read == settled
    assert [record.id for record in page.records] == [recorded.id]
    assert page.totals.charged == 1_700
    assert missing.value.code == "usage_record_not_found"
    assert credit.hold(hold_id)["captured"] == 1_700


def test_a_rule_the_schema_cannot_express_names_its_field(metering: httpx.Client) -> None:
    request = RecordUsageRequest.model_validate(
        usage_body(unique("job"), unique("user"), gpu_count=2)
    )
    with MeteringClient(str(metering.base_url), INTERNAL_TOKEN) as client:
        with pytest.raises(InvalidRequest) as raised:
            client.record_usage(request)

    assert raised.value.field == "gpu_indices"


def test_a_bad_limit_and_the_vendor_any_are_refused_before_sending() -> None:
    client = MeteringClient("http://127.0.0.1:9", INTERNAL_TOKEN)

    with pytest.raises(InvalidRequest) as raised:
        client.list_usage("u-1", limit=0)
    with pytest.raises(ValueError, match="vendor"):
        RecordUsageRequest.model_validate(usage_body("j", "u", vendor="any"))

    assert raised.value.field == "limit"
