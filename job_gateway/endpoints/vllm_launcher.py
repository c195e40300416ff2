"""vLLM's OpenAI server for one replica, ended with the replica whatever way it ends.

Run as a script by the interpreter of vLLM's own virtualenv (``GATEWAY_VLLM_PYTHON``):
``python vllm_launcher.py --model DIR ...`` takes the arguments of vLLM's
``vllm.entrypoints.openai.api_server`` (the ``vllm serve`` command line fails in the CPU
build, whose distribution is not named ``vllm``). It imports nothing of Gridweave. The
replica starts it in a session of its own and vLLM's engine processes join its process
group. A Ray actor may die by SIGKILL, which its children never hear, and vLLM's engine
processes outlive a killed API server: a thread here watches the parent, and once the
replica is gone it kills the whole group.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time

_SERVER = "vllm.entrypoints.openai.api_server"
_POLL_SECONDS = 0.5


def _end_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_POLL_SECONDS)
    os.killpg(0, signal.SIGKILL)  # the replica is gone: vLLM and its engines with it


def main() -> int:
    """Watch the replica, then run vLLM's OpenAI server with this script's arguments."""
    threading.Thread(target=_end_with, args=(os.getppid(),), daemon=True).start()
    sys.argv = [_SERVER, *sys.argv[1:]]
    runpy.run_module(_SERVER, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
