"""A job's output printed as it comes, from the byte offsets the previous read reached."""

from __future__ import annotations

import sys
from typing import TextIO

from gridweave_clients import ServiceRefused, ServiceUnavailable
from gridweave_clients.platform import PlatformClient

__all__ = ["OutputFollower"]


class OutputFollower:
    """Prints what a job wrote since the last read: its stdout to ``stdout`` (stderr with
    ``quiet_stdout``: --json keeps stdout for the one document), its stderr to stderr.

    Each byte is printed once. The output is an extra: a read that fails is tried again at
    the next call, and never fails the command.
    """

    def __init__(self, client: PlatformClient, job_id: str, *, quiet_stdout: bool) -> None:
        self._client = client
        self._job_id = job_id
        self._stdout: TextIO = sys.stderr if quiet_stdout else sys.stdout
        self._offsets = (0, 0)
        self.printed = False

    def read(self) -> bool:
        """Print what is new; whether anything was."""
        try:
            read = self._client.get_job_logs(
                self._job_id, stdout_offset=self._offsets[0], stderr_offset=self._offsets[1]
            )
        except (ServiceUnavailable, ServiceRefused):
            return False
        self._offsets = (read.stdout_offset, read.stderr_offset)
        for text, stream in ((read.stdout, self._stdout), (read.stderr, sys.stderr)):
            if text:
                stream.write(text)
                stream.flush()
        new = bool(read.stdout or read.stderr)
        self.printed = self.printed or new
        return new
