"""A process's CPU priority: the niceness the chain's background processes run at.

The audit chain's processes (metering's receipt deliverer, chain_service, CometBFT and the
ABCI application) do work nobody waits for: the receipt outbox holds what they have not
sent yet. Niced, they take only the CPU the settlement path leaves; under sustained
saturation they fall behind and catch up afterwards.
"""

from __future__ import annotations

import os

__all__ = ["lower_priority"]


def lower_priority(niceness: int) -> None:
    """Raise the calling process's niceness to ``niceness``; 0, or nicer already: unchanged.

    Every thread of the process is set (Linux keeps a niceness per thread, and a thread
    started before this call would keep its own); threads and child processes started after
    it inherit it. Never lowers a niceness: only root may, and nothing here needs it.
    """
    if niceness <= 0:
        return
    threads = os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ["0"]
    for thread in threads:
        try:
            if os.getpriority(os.PRIO_PROCESS, int(thread)) < niceness:
                os.setpriority(os.PRIO_PROCESS, int(thread), niceness)
        except ProcessLookupError:  # the thread ended since it was listed
            continue
