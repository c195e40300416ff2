"""User functions the execution tests run on Ray (pickled by value, like a user's own code)."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Any


def report(greeting: str, *, loud: bool = False) -> dict[str, Any]:
    """What the worker sees: host, process, Ray node and GPU variables; prints to both outputs."""
    import ray

    print(greeting.upper() if loud else greeting)
    print("to stderr", file=sys.stderr)
    os.system("echo from a child process")  # captured at the file-descriptor level too
    return {
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "ray_node_id": ray.get_runtime_context().get_node_id(),
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "HIP_VISIBLE_DEVICES": os.environ.get("HIP_VISIBLE_DEVICES"),
        "ROCR_VISIBLE_DEVICES": os.environ.get("ROCR_VISIBLE_DEVICES"),
    }


def fail(code: int) -> None:
    """Raise, after a line of output."""
    print("about to fail")
    raise ValueError(f"boom {code}")


def sleep_after_writing_pid(pid_file: str, seconds: float) -> str:
    """Write this process's id, then sleep (a job to time out, cancel or kill)."""
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(seconds)
    return "slept"


def die_on_first_attempt(marker: str, seconds: float) -> str:
    """First run: write the pid to ``marker`` and sleep (the test kills it); then return."""
    path = Path(marker)
    if not path.exists():
        path.write_text(str(os.getpid()))
        time.sleep(seconds)
        return "first"
    return "second"


def count_runs(runs_file: str, seconds: float) -> int:
    """Append a line per run to ``runs_file``, sleep, return how many runs it saw."""
    with open(runs_file, "a") as handle:
        handle.write(f"{os.getpid()}\n")
    time.sleep(seconds)
    return len(Path(runs_file).read_text().splitlines())


def record_run(runs_dir: str, job_id: str, seconds: float) -> str:
    """Sleep ``seconds`` between two lines of ``<runs_dir>/<job_id>.<pid>``: this run's span."""
    path = Path(runs_dir) / f"{job_id}.{os.getpid()}"
    path.write_text(f"{time.time()}\n")
    time.sleep(seconds)
    with path.open("a") as handle:
        handle.write(f"{time.time()}\n")
    return job_id


def leave_a_thread(seconds: float) -> str:
    """Return at once, leaving a thread running (a worker not to keep warm)."""
    import threading
    import time

    threading.Thread(target=time.sleep, args=(seconds,), daemon=True).start()
    return "left"
