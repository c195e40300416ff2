"""Recording usage (cost, then settlement) and reading it back per user and period."""

from __future__ import annotations

from datetime import UTC, datetime
from hashlib import sha256
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from gridweave_clients.credit import AsyncCreditClient, CreditClient
from gridweave_clients.metering.models import (
    RecordUsageRequest,
    SettlementResponse,
    UsagePageResponse,
    UsageRecordResponse,
    UsageTotalsResponse,
)
from gridweave_clients.metering.pricing import (
    PriceTable,
    Unpriced,
    price_per_gpu_second,
)
from gridweave_controller.billing import billed_seconds
from gridweave_runtime.async_connections import AsyncConnections
from gridweave_runtime.errors import InvalidRequest
from metering_service.errors import UsageRecordConflict, UsageRecordNotFound
from metering_service.models import SettlementState, UsageKind, UsageRecordModel
from metering_service.services.first_report import NotFirstReport, record_first_report
from metering_service.services.settlement import settle_locked_record, settle_usage_record

__all__ = [
    "get_usage_record",
    "list_user_usage",
    "record_usage",
    "record_usage_report",
    "settle_usage",
    "usage_response",
]

# What must match for a second record of the same job to count as a replay of the first.
_REPLAY_FIELDS = (
    "kind",
    "subject_id",
    "user_id",
    "owner_id",
    "node",
    "gpu_indices",
    "vendor",
    "vram_mb",
    "gpu_count",
    "billed_seconds",
)


def usage_response(record: UsageRecordModel) -> UsageRecordResponse:
    """Convert a usage record row to its API body."""
    is_job = record.kind == UsageKind.JOB
    return UsageRecordResponse(
        id=record.id,
        kind=record.kind,
        job_id=record.subject_id if is_job else None,
        endpoint_id=None if is_job else record.subject_id,
        hold_reference=record.hold_reference,
        user_id=record.user_id,
        owner_id=record.owner_id,
        node=record.node,
        gpu_indices=list(record.gpu_indices),
        vendor=record.vendor,
        vram_mb=record.vram_mb,
        gpu_count=record.gpu_count,
        wall_seconds=record.wall_seconds,
        billed_seconds=record.billed_seconds,
        price_per_gpu_second=record.price_per_gpu_second,
        cost=record.cost,
        started_at=record.started_at,
        finished_at=record.finished_at,
        created_at=record.created_at,
        settlement=SettlementResponse(
            state=record.settlement_state,
            amount=record.settlement_amount,
            charged=record.charged,
            hold_id=record.hold_id,
            attempts=record.settlement_attempts,
            error_code=record.settlement_error_code,
            error=record.settlement_error,
            settled_at=record.settled_at,
        ),
    )


def _subject(request: RecordUsageRequest) -> tuple[str, str, str]:
    """(kind, job or endpoint id, the reference its credit hold was placed with)."""
    if (request.job_id is None) == (request.endpoint_id is None):
        raise InvalidRequest("job_id", "give exactly one of job_id and endpoint_id")
    if request.job_id is not None:
        if request.hold_reference not in (None, request.job_id):
            raise InvalidRequest("hold_reference", "a job's hold is placed with its job id")
        return UsageKind.JOB, request.job_id, request.job_id
    assert request.endpoint_id is not None
    if request.hold_reference is None:
        # an endpoint runs again and again: each run's hold has its own reference
        raise InvalidRequest(
            "hold_reference", "an endpoint run needs the reference its credit hold was placed with"
        )
    return UsageKind.ENDPOINT, request.endpoint_id, request.hold_reference


def _new_record_values(request: RecordUsageRequest, table: PriceTable) -> dict[str, Any]:
    """The columns of a new record: validated against the rules, priced, costed."""
    kind, subject_id, hold_reference = _subject(request)
    if len(request.gpu_indices) != request.gpu_count:
        raise InvalidRequest("gpu_indices", "must list exactly gpu_count GPU indices")
    if len(set(request.gpu_indices)) != len(request.gpu_indices):
        raise InvalidRequest("gpu_indices", "must not repeat an index")
    try:
        price = price_per_gpu_second(table, vendor=request.vendor, vram_mb=request.vram_mb)
    except Unpriced as exc:
        raise InvalidRequest(exc.field, str(exc)) from exc
    finished_at = request.finished_at or datetime.now(UTC)
    if request.started_at is not None and finished_at < request.started_at:
        raise InvalidRequest("finished_at", "must not be before started_at")
    billed = billed_seconds(request.wall_seconds)  # the controller's rule, the one rule
    cost = billed * request.gpu_count * price
    return {
        "kind": kind,
        "subject_id": subject_id,
        "hold_reference": hold_reference,
        "user_id": request.user_id,
        "owner_id": request.owner_id or request.user_id,
        "node": request.node,
        "gpu_indices": request.gpu_indices,
        "vendor": request.vendor,
        "vram_mb": request.vram_mb,
        "gpu_count": request.gpu_count,
        "wall_seconds": request.wall_seconds,
        "billed_seconds": billed,
        "price_per_gpu_second": price,
        "cost": cost,
        "started_at": request.started_at,
        "finished_at": finished_at,
        "settlement_state": SettlementState.PENDING,
        "settlement_amount": cost,
        "gpu_model": request.gpu_model,
        "result_ref_sha256": (
            None if request.result_ref is None else sha256(request.result_ref.encode()).hexdigest()
        ),
    }


def _find_record(session: Session, hold_reference: str) -> UsageRecordModel | None:
    return session.scalar(
        select(UsageRecordModel).where(UsageRecordModel.hold_reference == hold_reference)
    )


def _store_record(
    session: Session, values: dict[str, Any]
) -> tuple[UsageRecordModel, None] | tuple[None, int]:
    """Insert the record unless its hold has one.

    A new record comes back inserted and not committed: ``(record, None)``. Its uncommitted
    row holds the hold reference's unique key, so a concurrent report of the same hold waits
    on its insert until this transaction ends; the caller settles it and commits once. The
    row is read back whole by the insert itself (``RETURNING``): a row PostgreSQL stores but
    Python cannot read (a timestamp out of Python's range) fails here and is never kept.

    A hold that has a record already: ``(None, its id)``, committed, after checking that the
    report is a replay of it.

    Raises:
        UsageRecordConflict: the hold already has a record with other figures.
    """
    # Three rounds at most: a record met on conflict may be removed (refused) meanwhile.
    for _ in range(3):
        inserted = session.scalar(
            select(UsageRecordModel)
            .from_statement(
                insert(UsageRecordModel)
                .values(**values)
                .on_conflict_do_nothing(constraint="uq_usage_records_hold_reference")
                .returning(UsageRecordModel)
            )
            .execution_options(populate_existing=True)
        )
        if inserted is not None:
            return inserted, None
        existing = _find_record(session, values["hold_reference"])
        if existing is not None:
            _check_replay(existing, values)
            usage_id = existing.id
            session.commit()
            return None, usage_id
        session.rollback()
    raise UsageRecordConflict(hold_reference=values["hold_reference"], differing_fields=[])


def _check_replay(record: UsageRecordModel, values: dict[str, Any]) -> None:
    differing = [name for name in _REPLAY_FIELDS if getattr(record, name) != values[name]]
    if differing:
        raise UsageRecordConflict(
            usage_id=record.id, hold_reference=record.hold_reference, differing_fields=differing
        )


def record_usage(
    session: Session, *, request: RecordUsageRequest, price_table: PriceTable, credit: CreditClient
) -> tuple[UsageRecordResponse, bool]:
    """Store the usage once per hold and settle that hold; (record, was it a replay).

    Raises:
        InvalidRequest: the record breaks a rule the schema cannot express (names the field).
        UsageRecordConflict: the hold already has a record with other figures.
        HoldOwnerMismatch: the hold is another account's than ``owner_id`` (nothing kept).
    """
    values = _new_record_values(request, price_table)
    inserted, replayed_id = _store_record(session, values)
    if inserted is not None:
        # one transaction: the record, its settlement and its receipt commit together
        record = settle_locked_record(session, inserted, credit=credit)
        return usage_response(record), False
    assert replayed_id is not None
    record = settle_usage_record(session, usage_id=replayed_id, credit=credit)
    return usage_response(record), True


async def record_usage_report(
    session: Session,
    connections: AsyncConnections,
    *,
    request: RecordUsageRequest,
    price_table: PriceTable,
    credit: CreditClient,
    async_credit: AsyncCreditClient,
) -> tuple[UsageRecordResponse, bool]:
    """:func:`record_usage`, its usual case (the hold's first report, settled) on the event
    loop (``services.first_report``); anything else in a worker thread, by the full path.

    Raises:
        As :func:`record_usage`.
    """
    values = _new_record_values(request, price_table)
    try:
        record = await record_first_report(connections, async_credit, values)
    except NotFirstReport:
        return await run_in_threadpool(
            record_usage, session, request=request, price_table=price_table, credit=credit
        )
    return usage_response(record), False


def settle_usage(session: Session, *, usage_id: int, credit: CreditClient) -> UsageRecordResponse:
    """Try again to settle a record that is pending or was refused; a settled one is unchanged."""
    return usage_response(settle_usage_record(session, usage_id=usage_id, credit=credit))


def get_usage_record(session: Session, *, usage_id: int) -> UsageRecordResponse:
    """One usage record; raises UsageRecordNotFound."""
    record = session.get(UsageRecordModel, usage_id)
    if record is None:
        raise UsageRecordNotFound(usage_id=usage_id)
    return usage_response(record)


def list_user_usage(
    session: Session,
    *,
    user_id: str,
    period_from: datetime | None,
    period_to: datetime | None,
    limit: int,
    before_id: int | None,
    hold_reference: str | None = None,
    endpoint_id: str | None = None,
) -> UsagePageResponse:
    """The records ``user_id`` ran that finished in [from, to), newest first, with totals;
    only one hold's (``hold_reference``) or one endpoint's (``endpoint_id``) when given.

    Raises:
        InvalidRequest: ``to`` is not after ``from``.
    """
    if period_from is not None and period_to is not None and period_to <= period_from:
        raise InvalidRequest("to", "must be after from")
    conditions: list[ColumnElement[bool]] = [UsageRecordModel.user_id == user_id]
    if period_from is not None:
        conditions.append(UsageRecordModel.finished_at >= period_from)
    if period_to is not None:
        conditions.append(UsageRecordModel.finished_at < period_to)
    if hold_reference is not None:
        conditions.append(UsageRecordModel.hold_reference == hold_reference)
    if endpoint_id is not None:
        conditions.append(UsageRecordModel.kind == "endpoint")
        conditions.append(UsageRecordModel.subject_id == endpoint_id)
    totals = session.execute(
        select(
            func.count(),
            func.coalesce(func.sum(UsageRecordModel.billed_seconds), 0),
            func.coalesce(
                func.sum(UsageRecordModel.billed_seconds * UsageRecordModel.gpu_count), 0
            ),
            func.coalesce(func.sum(UsageRecordModel.cost), 0),
            func.coalesce(func.sum(UsageRecordModel.charged), 0),
        ).where(*conditions)
    ).one()
    page_query = select(UsageRecordModel).where(*conditions)
    if before_id is not None:
        page_query = page_query.where(UsageRecordModel.id < before_id)
    records = session.scalars(page_query.order_by(UsageRecordModel.id.desc()).limit(limit)).all()
    return UsagePageResponse(
        user_id=user_id,
        period_from=period_from,
        period_to=period_to,
        totals=UsageTotalsResponse(
            records=int(totals[0]),
            billed_seconds=int(totals[1]),
            gpu_seconds=int(totals[2]),
            cost=int(totals[3]),
            charged=int(totals[4] or 0),
        ),
        records=[usage_response(record) for record in records],
        next_before_id=records[-1].id if len(records) == limit else None,
    )
