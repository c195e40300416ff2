"""What an endpoint's Serve replicas wrote: the last lines of each one's stdout and stderr.

Ray writes a replica's stdout and stderr (the user's prints, and Serve's own log lines,
which Serve sends to stderr by default) to ``worker-<worker id>-<job id>-<pid>.out|.err`` in
the logs directory of the Ray session on the replica's node. The gateway runs Ray without
its dashboard, so ``ray.util.state`` (``list_logs``/``get_log``) is not there. Instead:

1. the replicas of the endpoint's application are found in the GCS actor table (actors
   named ``SERVE_REPLICA::<app>#<deployment>#<replica id>``, with their node, pid and state;
   protobuf, no pickle); a dead replica stays there, so a stopped endpoint shows what is left
   while its node keeps the files;
2. a zero-CPU Ray task pinned to each replica's node reads the tails of its two files
   (bounded: the last :data:`MAX_BYTES` of each, then the last N lines, each line cut);
3. the task hands its answer back as JSON in Ray's internal key-value store, under a random
   key the gateway deletes after reading: the gateway never ``ray.get``\\ s a task's value
   (Ray deserializes those with pickle).

The lines are the user's text: decoded with replacement, terminal escapes and other control
characters removed, never parsed or rendered as markup.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gridweave_clients.gateway.endpoints import ReplicaLog, ReplicaLogStream

__all__ = [
    "MAX_BYTES",
    "MAX_LINE_CHARS",
    "MAX_REPLICAS",
    "ReplicaProcess",
    "clean_line",
    "find_replicas",
    "read_replica_logs",
    "tail_lines",
]

#: The most bytes read from the end of one file.
MAX_BYTES = 256 * 1024
#: Longer lines are cut to this many characters.
MAX_LINE_CHARS = 2000
#: The most replicas one read shows (the running ones first, then the latest ended).
MAX_REPLICAS = 8
_REPLICA_ACTOR = "SERVE_REPLICA::"
_KV_NAMESPACE = "gridweave-logs"
#: Ray's own markers at the head of a worker's files, not the process's output.
_RAY_MARKERS = (":actor_name:", ":task_name:", ":job_id:")
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_STREAMS = (("stdout", "out"), ("stderr", "err"))
#: The largest answer a reader may leave (two streams of MAX_LINE_CHARS-bounded lines).
_MAX_ANSWER_BYTES = 8 * 1024 * 1024


class _NodeAnswer(BaseModel):
    """What a reader leaves in the key-value store (read as untrusted input)."""

    streams: list[ReplicaLogStream] = []
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ReplicaProcess:
    """A replica's actor as the GCS actor table has it."""

    replica: str
    node_id: str
    pid: int
    state: str
    started_ms: int


def clean_line(line: str) -> str:
    """A line as plain text: no terminal escapes or control characters, at most
    :data:`MAX_LINE_CHARS` characters."""
    text = _CONTROLS.sub("", _ESCAPES.sub("", line)).rstrip()
    if len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + " [cut]"
    return text


def tail_lines(path: Path, *, max_lines: int, max_bytes: int = MAX_BYTES) -> tuple[list[str], bool]:
    """The last ``max_lines`` lines of the file within its last ``max_bytes``, cleaned; and
    whether older lines were left out."""
    with path.open("rb") as file:
        size = file.seek(0, 2)
        start = max(0, size - max_bytes)
        file.seek(start)
        data = file.read(max_bytes)
    lines = data.decode("utf-8", errors="replace").split("\n")
    truncated = start > 0
    if truncated:
        lines = lines[1:]  # the first one began before the bytes read
    if lines and lines[-1] == "":
        lines.pop()
    kept = [clean_line(line) for line in lines if not line.startswith(_RAY_MARKERS)]
    if len(kept) > max_lines:
        return kept[-max_lines:], True
    return kept, truncated


def _read_on_node(key: str, pid: int, max_lines: int) -> None:
    """The Ray task on the replica's node: its files' tails, as JSON under ``key``."""
    import ray
    from ray.experimental.internal_kv import _internal_kv_put

    logs = Path(ray._private.worker._global_node.get_logs_dir_path())  # type: ignore[attr-defined]
    streams: list[dict[str, Any]] = []
    for stream, suffix in _STREAMS:
        files = sorted(logs.glob(f"worker-*-{pid}.{suffix}"), key=lambda p: p.stat().st_mtime)
        if files:
            lines, truncated = tail_lines(files[-1], max_lines=max_lines)
            streams.append({"stream": stream, "lines": lines, "truncated": truncated})
    answer = {"streams": streams} if streams else {"error": "no log files on its node"}
    _internal_kv_put(key, json.dumps(answer).encode(), overwrite=True, namespace=_KV_NAMESPACE)


@cache
def _reader() -> Any:
    """The reader as a Ray remote function, made once (each one made is exported to Ray)."""
    import ray

    return ray.remote(num_cpus=0, max_retries=0)(_read_on_node)


def find_replicas(app: str, *, limit: int = MAX_REPLICAS) -> list[ReplicaProcess]:
    """The application's replicas: the running ones first, then the latest started."""
    from ray._private import state  # the GCS tables; ray.util.state needs the dashboard

    prefix = f"{_REPLICA_ACTOR}{app}#"
    found: list[ReplicaProcess] = []
    for info in state.actors().values():
        name = str(info.get("Name") or "")
        if not name.startswith(prefix) or not info.get("Pid"):
            continue
        found.append(
            ReplicaProcess(
                replica=name.rsplit("#", 1)[-1],
                node_id=str(info["Address"]["NodeID"]),
                pid=int(info["Pid"]),
                state=str(info.get("State", "UNKNOWN")),
                started_ms=int(info.get("StartTime") or 0),
            )
        )
    found.sort(key=lambda r: (r.state != "ALIVE", -r.started_ms))
    return found[:limit]


def read_replica_logs(app: str, *, lines: int, timeout_s: float = 20.0) -> list[ReplicaLog]:
    """Each replica of the Serve application ``app`` with the last ``lines`` of its stdout
    and stderr, read on its node (blocking: Ray calls)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    replicas = find_replicas(app)
    reader = _reader()
    keys = {r.replica: uuid.uuid4().hex for r in replicas}
    runs = {
        reader.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(r.node_id, soft=False)
        ).remote(keys[r.replica], r.pid, lines): r
        for r in replicas
    }
    deadline = time.monotonic() + timeout_s
    pending = list(runs)
    while pending and time.monotonic() < deadline:  # says an answer exists; fetches nothing
        _, pending = ray.wait(
            pending,
            num_returns=len(pending),
            timeout=max(0.0, deadline - time.monotonic()),
            fetch_local=False,
        )
    for ref in pending:
        ray.cancel(ref, force=True)
    return [_answer(r, keys[r.replica]) for r in replicas]


def _answer(replica: ReplicaProcess, key: str) -> ReplicaLog:
    """What the replica's reader left under ``key`` (the key deleted)."""
    from ray.experimental.internal_kv import _internal_kv_del, _internal_kv_get

    raw = _internal_kv_get(key, namespace=_KV_NAMESPACE)
    _internal_kv_del(key, namespace=_KV_NAMESPACE)
    started = datetime.fromtimestamp(replica.started_ms / 1000, UTC) if replica.started_ms else None
    log = ReplicaLog(replica=replica.replica, state=replica.state, started_at=started)
    if raw is None:
        log.error = "its node did not answer (it may have left the cluster)"
        return log
    try:
        if len(raw) > _MAX_ANSWER_BYTES:
            raise ValueError("too large")
        answer = _NodeAnswer.model_validate_json(raw)
    except (ValueError, ValidationError):
        log.error = "its node's answer could not be read"
        return log
    log.streams, log.error = answer.streams, answer.error
    return log
