"""Why a job (or an endpoint) ended, as the gateway words it and a client reads it back: one
place for each."""

from __future__ import annotations

import re

__all__ = [
    "IMAGE_PULL_FAILED",
    "IMAGE_REFUSED",
    "OUT_OF_MEMORY",
    "PIP_INSTALL_FAILED",
    "out_of_memory_limit_mb",
    "out_of_memory_message",
]

#: The reason of a job whose container the kernel killed for memory.
OUT_OF_MEMORY = "OutOfMemory"
#: The reason of a job whose image its node could not pull, unpack or run (no GPU time).
IMAGE_PULL_FAILED = "ImagePullFailed"
#: The reason of a job whose owner may no longer pull its image (a share withdrawn).
IMAGE_REFUSED = "ImageRefused"
#: The reason of a job or an endpoint whose pip= requirements its node could not install
#: (no GPU time).
PIP_INSTALL_FAILED = "PipInstallFailed"
_LIMIT = re.compile(r"memory limit of (\d+) MiB")


def out_of_memory_message(limit_mb: int) -> str:
    """The job's message when it went past its memory limit."""
    return f"the job used more than its memory limit of {limit_mb} MiB and was killed"


def out_of_memory_limit_mb(message: str | None) -> int | None:
    """The limit an :data:`OUT_OF_MEMORY` message names (None when it names none)."""
    found = _LIMIT.search(message or "")
    return int(found.group(1)) if found else None
