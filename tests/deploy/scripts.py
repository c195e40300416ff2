"""Running the deploy scripts in tests: bash, a clean environment, captured output."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
#: Every script a user runs: each has --help and --dry-run.
SCRIPTS = (
    "deploy.sh",
    "update.sh",
    "setup-https.sh",
    "join-node.sh",
    "leave-node.sh",
    "node-heartbeat.sh",
)


def run_script(
    name: str, *args: str, tools: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``bash deploy/<name> args...`` with only PATH and HOME of this environment.

    PATH here has no wg, nvidia-smi or rocm-smi: the scripts take their openssl key path
    and the GPUs a test declares, or those of stand-in tools in ``tools`` (put first).
    """
    path = os.environ["PATH"] if tools is None else f"{tools}:{os.environ['PATH']}"
    env = {"PATH": path, "HOME": os.environ.get("HOME", "/root"), "LC_ALL": "C"}
    return subprocess.run(
        ["bash", str(DEPLOY / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
