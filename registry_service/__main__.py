"""``python -m registry_service``: the registry on 30500 and its supervisor on 30501.

Runs until SIGTERM or SIGINT: the registry process (restarted if it dies), the usage
reconciliation and the garbage collection on their intervals, and the supervisor's HTTP
server (``/healthz``, ``/metrics``, ``POST /v1/collections``). Exits 2 on a bad setting
and 1 when the registry cannot start.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import threading
from pathlib import Path

import uvicorn
from pydantic import ValidationError

from gridweave_runtime.server import server_config
from registry_service.app import create_app
from registry_service.settings import RegistrySettings
from registry_service.supervisor import RegistryStartError, RegistrySupervisor

_BUILD_SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "registry" / "build.sh"


def source_binary(build_script: Path = _BUILD_SCRIPT) -> Path:
    """The registry of a source checkout: ``tools/registry/build.sh`` (cached)."""
    result = subprocess.run([str(build_script)], check=True, capture_output=True, text=True)
    return Path(result.stdout.strip().splitlines()[-1]) / "registry"


def main() -> int:
    """Run the registry and its supervisor until interrupted."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        settings = RegistrySettings()
    except ValidationError as exc:
        print(f"registry_service: {exc}", file=sys.stderr)
        return 2
    try:
        binary = settings.binary or source_binary()
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"registry_service: tools/registry/build.sh failed: {exc}", file=sys.stderr)
        return 1
    app = create_app(settings, binary=binary)
    supervisor: RegistrySupervisor = app.state.supervisor
    stop = threading.Event()
    try:
        supervisor.start()
    except RegistryStartError as exc:
        print(f"registry_service: {exc}", file=sys.stderr)
        supervisor.close()
        return 1
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    # uvicorn in a thread of its own leaves the signals to this one (in the main thread it
    # would re-raise SIGTERM once stopped, before the registry is stopped)
    server = uvicorn.Server(server_config(app, settings, port=settings.health_port))
    http = threading.Thread(target=server.run, name="registry-http")
    loop = threading.Thread(target=supervisor.run, args=(stop,), name="registry-maintenance")
    http.start()
    loop.start()
    try:
        while not stop.wait(1.0):
            if not http.is_alive():  # the port was taken: nothing to serve health on
                print("registry_service: the HTTP server stopped", file=sys.stderr)
                stop.set()
                return 1
    finally:
        server.should_exit = True
        http.join()
        loop.join()
        supervisor.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
