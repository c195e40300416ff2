"""One host uid per platform user on a node: what a user's containers run as on the host.

Two users' jobs on one node never share a uid, so neither can touch the other's files or
signal the other's processes even past the namespaces. The uids are handed out in order
from ``first_uid`` and written down in ``<sandbox state>/uids.json`` under an exclusive
lock, so every worker process of the node (and a restarted one) agrees. A uid is never 0,
never the services' own, and never handed to a second user.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

__all__ = ["FIRST_UID", "MAX_USERS", "user_uid"]

#: The first uid handed out: far above any account a node's own users have.
FIRST_UID = 2_000_000
#: How many users one node can give a uid to.
MAX_USERS = 1_000_000


def user_uid(state_dir: Path, user_id: str, *, first_uid: int = FIRST_UID) -> int:
    """The host uid of ``user_id``'s containers on this node (allocated on first use)."""
    if not user_id:
        raise ValueError("a container belongs to a user: user_id is empty")
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = state_dir / "uids.json"
    with open(state_dir / "uids.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        table: dict[str, int] = json.loads(path.read_text()) if path.exists() else {}
        uid = table.get(user_id)
        if uid is not None:
            return uid
        taken = set(table.values())
        uid = first_uid + len(table)
        while uid in taken or uid == os.getuid():
            uid += 1
        if uid >= first_uid + MAX_USERS:
            raise RuntimeError(f"this node has no uid left for user {user_id}")
        table[user_id] = uid
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(table))
        os.replace(partial, path)  # a crash leaves the old table whole
        return uid
