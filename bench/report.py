"""What every benchmark shares: the machine line and its own section of docs/benchmarks.md."""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime

from tests.support.kubeapi import REPO_ROOT

DOC = REPO_ROOT / "docs" / "benchmarks.md"


def machine_line() -> str:
    """Date, architecture, cores, memory and Python of this run, for the report."""
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"Run {date} on {platform.machine()} Linux, {os.cpu_count()} cores / "
        f"{memory_gib:.0f} GiB, Python {platform.python_version()}"
    )


def write_section(name: str, section: str) -> None:
    """Replace benchmark ``name``'s section of docs/benchmarks.md, keeping the others."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    block = f"{start}\n{section}\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)
