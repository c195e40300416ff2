"""User functions the execution tests run (pickled by value, like a user's own code).

They run in their job's container: a test learns what happened from the result, the
outputs, or a process on the host whose command line carries a marker (``sleep_marked``);
only the functions for the executor's bookkeeping tests, run without the sandbox
(``runtime="none"``), write files of the host (``count_runs``, ``record_run``).
"""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from pathlib import Path
from typing import Any


def report(greeting: str, *, loud: bool = False) -> dict[str, Any]:
    """What the job sees: host, process and GPU variables; prints to both outputs."""
    print(greeting.upper() if loud else greeting)
    print("to stderr", file=sys.stderr)
    os.system("echo from a child process")  # captured at the file-descriptor level too
    return {
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "HIP_VISIBLE_DEVICES": os.environ.get("HIP_VISIBLE_DEVICES"),
        "ROCR_VISIBLE_DEVICES": os.environ.get("ROCR_VISIBLE_DEVICES"),
    }


def fail(code: int) -> None:
    """Raise, after a line of output."""
    print("about to fail")
    raise ValueError(f"boom {code}")


def sleep_marked(marker: str, seconds: float) -> str:
    """Sleep in a child process whose command line carries ``marker`` (a job to time out,
    cancel or kill: the host finds the process by it)."""
    import subprocess

    subprocess.run([sys.executable, "-c", f"import time; time.sleep({seconds})", marker])
    return "slept"


def die_on_first_attempt(marker: str, seconds: float) -> str:
    """Attempt 0: sleep marked (the test kills its worker); a later attempt returns."""
    if os.environ.get("GRIDWEAVE_ATTEMPT") == "0":
        sleep_marked(marker, seconds)
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
    """Return at once, leaving a thread running (it dies with the job's container)."""
    import threading
    import time

    threading.Thread(target=time.sleep, args=(seconds,), daemon=True).start()
    return "left"


def allocate(megabytes: int) -> int:
    """Hold ``megabytes`` of touched memory."""
    held = [bytearray(1024 * 1024) for _ in range(megabytes)]
    return len(held)


def read_text(path: str) -> str | None:
    """The file at ``path`` in the job's image, None when the image has no such file."""
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def six_from_its_environment() -> str:
    """Where six, installed by the job's pip=, was imported from, and its version."""
    import six  # type: ignore[import-untyped]

    return f"{six.__version__} {six.__file__}"


def square_or_refuse(x: int) -> int:
    """``x`` squared; a multiple of 7 raises (a map's failing input)."""
    if x % 7 == 0 and x:
        raise ValueError(f"{x} is a multiple of 7")
    return x * x


def record_input(runs_dir: str, item: int, seconds: float) -> int:
    """Sleep ``seconds``, leaving a file of its own per run (``<item>.<random>``)."""
    (Path(runs_dir) / f"{item}.{uuid.uuid4().hex}").write_text("ran\n")
    time.sleep(seconds)
    return item
