"""A usage report's first arrival, recorded and settled on the event loop in one transaction.

Nearly every report is the first of its hold, and credit_service settles it. That case runs
here, on metering's own async connections (``gridweave_runtime.async_connections``) and the
async credit client, with no worker thread and no ORM session: the record inserted
(``RETURNING`` the whole row), the hold settled by reference, the settlement noted and the
receipt queued, committed once. Its uncommitted row holds the hold reference's unique key
while credit_service is called, so a concurrent report of the same hold waits and then finds
it settled (``services.settlement``).

Everything else leaves this module with nothing kept, for the full path
(``services.usage.record_usage``) to do: a hold that has a record already (a replay), and a
settlement credit_service refused (the refusal moved no money, and its rules live in
``services.settlement``). credit_service unreachable is noted here: the record is kept
pending, as the full path keeps it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from psycopg import AsyncConnection, OperationalError, sql
from psycopg.rows import dict_row

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.errors import ServiceRefused, ServiceUnavailable
from gridweave_runtime.async_connections import AsyncConnections
from metering_service.models import ReceiptOutboxModel, SettlementState, UsageRecordModel
from metering_service.services.settlement import (
    note_credit_unavailable,
    settlement_call,
    switch_settlement_state,
)

__all__ = ["NotFirstReport", "record_first_report"]

#: The columns the one writer of a settlement (``switch_settlement_state``) may change.
_SETTLEMENT_COLUMNS = (
    "settlement_state",
    "settlement_attempts",
    "settlement_amount",
    "settlement_error_code",
    "settlement_error",
    "charged",
    "hold_id",
    "settled_at",
)
#: The settlement noted and, when it settled, the receipt queued: one statement, one round
#: trip (the outbox row is never lost: it commits with the record). Rendered to text once:
#: psycopg converts a composed query again on each execution, a text one from its cache.
_NOTE_SETTLEMENT = (
    sql.SQL(
        "WITH noted AS (UPDATE {records} SET {columns} WHERE id = %(id)s "
        "RETURNING id, settlement_state) "
        "INSERT INTO {outbox} (usage_id) SELECT id FROM noted "
        "WHERE settlement_state = %(receipt_state)s "
        "ON CONFLICT ON CONSTRAINT {unique} DO NOTHING"
    )
    .format(
        records=sql.Identifier(UsageRecordModel.__tablename__),
        columns=sql.SQL(", ").join(
            sql.SQL("{} = {}").format(sql.Identifier(name), sql.Placeholder(name))
            for name in _SETTLEMENT_COLUMNS
        ),
        outbox=sql.Identifier(ReceiptOutboxModel.__tablename__),
        unique=sql.Identifier("uq_receipt_outbox_usage_id"),
    )
    .as_string()
)


class NotFirstReport(Exception):
    """Nothing was kept: the report is for the full path (a replay, a refusal, a dropped
    database connection)."""


@cache
def _insert_new(columns: tuple[str, ...]) -> str:
    """``INSERT`` of a record with ``columns`` unless its hold has one, ``RETURNING`` it
    (text, as ``_NOTE_SETTLEMENT``)."""
    return (
        sql.SQL(
            "INSERT INTO {table} ({columns}) VALUES ({values}) "
            "ON CONFLICT ON CONSTRAINT {unique} DO NOTHING RETURNING *"
        )
        .format(
            table=sql.Identifier(UsageRecordModel.__tablename__),
            columns=sql.SQL(", ").join(map(sql.Identifier, columns)),
            values=sql.SQL(", ").join(map(sql.Placeholder, columns)),
            unique=sql.Identifier("uq_usage_records_hold_reference"),
        )
        .as_string()
    )


async def record_first_report(
    connections: AsyncConnections, credit: AsyncCreditClient, values: dict[str, Any]
) -> UsageRecordModel:
    """Insert the record of ``values`` (``services.usage``'s new record), settle its hold,
    commit; the record as stored (not attached to any session).

    Raises:
        NotFirstReport: the hold has a record already, credit_service refused the
            settlement, or a kept connection was dropped; nothing was kept.
    """
    try:
        async with connections.transaction() as connection:
            return await _record_and_settle(connection, credit, values)
    except OperationalError as dropped:
        # a kept connection the server dropped (a restart): the full path's pool pings first,
        # and credit_service's settlement key makes its second call safe
        raise NotFirstReport("a database connection was dropped") from dropped


async def _record_and_settle(
    connection: AsyncConnection[Any], credit: AsyncCreditClient, values: dict[str, Any]
) -> UsageRecordModel:
    async with connection.cursor(row_factory=dict_row) as cursor:
        await cursor.execute(_insert_new(tuple(values)), values)
        row = await cursor.fetchone()
    if row is None:
        raise NotFirstReport("the hold has a record already")
    record = UsageRecordModel(**row)
    try:
        hold = await credit.settle(**settlement_call(record))
    except ServiceUnavailable as exc:
        note_credit_unavailable(record, exc)
    except ServiceRefused as exc:
        raise NotFirstReport(f"credit_service refused: {exc.code}") from exc
    else:
        switch_settlement_state(record, SettlementState.SETTLED, hold=hold)
    settlement = {name: getattr(record, name) for name in _SETTLEMENT_COLUMNS}
    noted = {"id": record.id, "receipt_state": SettlementState.SETTLED, **settlement}
    await connection.execute(_NOTE_SETTLEMENT, noted)
    return record
