"""vLLM's virtualenv for the vllm endpoint tests: ``GATEWAY_VLLM_PYTHON``, else the one
``make vllm`` (``tools/vllm/build.sh``) built into its cache."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["VllmUnavailable", "find_vllm_python"]

_BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "vllm" / "build.sh"


class VllmUnavailable(RuntimeError):
    """No virtualenv with vLLM on this machine."""


def find_vllm_python() -> str:
    """The interpreter of vLLM's virtualenv (never built here: ``make vllm`` builds it)."""
    named = os.environ.get("GATEWAY_VLLM_PYTHON")
    if named:
        if not Path(named).is_file():
            raise VllmUnavailable(f"GATEWAY_VLLM_PYTHON={named} is no file")
        return named
    found = subprocess.run(
        [str(_BUILD_SCRIPT), "--cached"], capture_output=True, text=True, check=False, timeout=60
    )
    if found.returncode != 0:
        raise VllmUnavailable(found.stderr.strip() or "tools/vllm/build.sh --cached failed")
    return found.stdout.strip()
