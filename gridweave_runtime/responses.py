"""Answers the services' routers share: the idempotent-replay header, JSON sent as is."""

from __future__ import annotations

from fastapi import Response

__all__ = ["REPLAYED_HEADER", "json_answer", "mark_replayed"]

#: ``true`` when an answer replays an earlier call made with the same idempotency key.
REPLAYED_HEADER = "Idempotent-Replayed"


def mark_replayed(response: Response, replayed: bool) -> None:
    """Tell the client whether this answer is a replay of an earlier call with the same key."""
    response.headers[REPLAYED_HEADER] = "true" if replayed else "false"


def json_answer(body: str, replayed: bool) -> Response:
    """An answer that is already JSON text (built and stored by the database): sent as is."""
    return Response(
        body,
        media_type="application/json",
        headers={REPLAYED_HEADER: "true" if replayed else "false"},
    )
