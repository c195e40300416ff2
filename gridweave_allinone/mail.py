"""The all-in-one's mail catcher: verification emails kept in the faucet's outbox, shown.

With no SMTP server configured (``FAUCET_SMTP_HOST`` unset), the faucet keeps each
verification email in its outbox instead of sending it. On one machine the person signing
up is the operator, so the all-in-one prints each new one on its console.
"""

from __future__ import annotations

from gridweave_clients.errors import ServiceError
from gridweave_clients.faucet import FaucetClient

__all__ = ["OutboxWatcher"]


class OutboxWatcher:
    """Yields a line for each outbox message not shown yet (the faucet as role admin)."""

    def __init__(self, faucet_url: str, operator_token: str) -> None:
        self._client = FaucetClient(faucet_url, operator_token, role="admin", timeout=5.0)
        self._last_id: int | None = None
        self.new_messages()  # what was there before this start was shown then

    def new_messages(self) -> list[str]:
        """Lines for the messages kept since the last call (none on the first)."""
        try:
            page = self._client.list_outbox(limit=50)
        except ServiceError:
            return []  # the faucet restarting: next time
        seen = self._last_id
        self._last_id = max([seen or 0, *(m.id for m in page.messages)])
        if seen is None:
            return []
        return [
            f"mail to {m.recipient}: {m.body.strip().splitlines()[0] if m.body.strip() else ''}"
            for m in reversed(page.messages)
            if m.state == "kept" and m.id > seen
        ]

    def close(self) -> None:
        self._client.close()
