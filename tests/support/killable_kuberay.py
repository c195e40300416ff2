"""kuberay-service that a test can kill mid-request and start again on the same port.

:class:`KubeRayProcess` runs ``python -m kuberay_service`` (its own process, over a real
cluster) and kills it with SIGKILL; :class:`KubeRayThread` serves an app (over the
in-memory store, which must stay in the test's process) under uvicorn in a thread and
kills it by aborting every open connection (the peer sees a reset, as after a crash) and
leaving without a graceful shutdown. Either way the port is free until :meth:`start`.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx
import uvicorn
from starlette.types import ASGIApp

from tests.support.credentials import service_auth_env
from tests.support.http_server import free_port
from tests.support.kubeapi import REPO_ROOT

__all__ = ["KubeRayProcess", "KubeRayThread"]

START_TIMEOUT_S = 60.0


def _wait_healthy(url: str, alive: Callable[[], bool]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if not alive() or time.monotonic() > deadline:
            raise RuntimeError(f"kuberay-service did not start at {url}")
        time.sleep(0.05)


class _Killable:
    """Start, kill, start again on one port; a context manager that kills at the end."""

    def __init__(self, port: int | None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Serve (again) on the same port; return once ``/healthz`` answers."""
        raise NotImplementedError

    def kill(self) -> None:
        """Stop at once: open connections are cut, nothing shuts down gracefully."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.kill()


class KubeRayProcess(_Killable):
    """``python -m kuberay_service`` over the cluster of ``kubeconfig``."""

    def __init__(
        self, kubeconfig: Path, namespace: str, token: str, *, port: int | None = None
    ) -> None:
        super().__init__(port)
        self.env = {
            **os.environ,
            "KUBERAY_KUBECONFIG": str(kubeconfig),
            "KUBERAY_NAMESPACE": namespace,
            "KUBERAY_PORT": str(self.port),
            "KUBERAY_HOST": "127.0.0.1",
            **service_auth_env(token),
            "KUBERAY_NODES_ENABLED": "false",  # /v1/crd only: no database
        }
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        """The running server's process id."""
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        """Start the process; return once it serves."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "kuberay_service"], env=self.env, cwd=REPO_ROOT
        )
        self.proc = proc
        try:
            _wait_healthy(self.url, lambda: proc.poll() is None)
        except BaseException:
            self.kill()
            raise

    def kill(self) -> None:
        """SIGKILL, and wait for it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=15)
        self.proc = None


class KubeRayThread(_Killable):
    """An app from ``make_app`` under uvicorn in a thread; each start serves a fresh one."""

    def __init__(self, make_app: Callable[[], ASGIApp], *, port: int | None = None) -> None:
        super().__init__(port)
        self.make_app = make_app
        self._server: uvicorn.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Serve in a new thread; return once it serves."""
        config = uvicorn.Config(
            self.make_app(), host="127.0.0.1", port=self.port, log_level="warning"
        )
        server = uvicorn.Server(config)

        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            await server.serve()

        thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
        self._server, self._thread = server, thread
        thread.start()
        _wait_healthy(self.url, thread.is_alive)

    def kill(self) -> None:
        """Abort every connection (a reset for the peer) and stop without waiting for any."""
        server, loop, thread = self._server, self._loop, self._thread
        if server is None or loop is None or thread is None:
            return

        def abort() -> None:
            for connection in list(server.server_state.connections):
                transport = getattr(connection, "transport", None)
                if transport is not None:
                    transport.abort()

        try:
            loop.call_soon_threadsafe(abort)
        except RuntimeError:  # the loop already ended
            pass
        server.should_exit = True  # the cut connections end their requests at once
        thread.join(timeout=5)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=15)
        self._server = self._loop = self._thread = None
