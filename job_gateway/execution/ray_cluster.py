"""The gateway's Ray: connect to ``RAY_ADDRESS``, or start a local head that outlives it.

The local head is started with ``ray start --head`` as processes of their own (a new
session), so it, and the detached worker actors on it, survive a gateway restart or a
``kill -9``; the next gateway finds it on the same port and connects to it. The head
declares the local node's label ``gridweave.io/node=<name>`` (which pins the node's jobs
to it) and the node's GPUs from the inventory (``--num-gpus``, simulated ones included;
jobs ask ``num_gpus=0`` since the gateway, not Ray, chooses the GPUs).

Every Ray worker (a job's process, an endpoint's replica) inherits the environment of
``ray start``, so the head is started without the gateway's secrets
(:func:`ray_environment`): a job must not read ``GRIDWEAVE_SERVICE_TOKEN`` (every internal
route, and the Serve key derived from it) from its own ``os.environ``.

The local head always runs Ray's token authentication with a token of its own
(:func:`local_auth_environment`: ``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN_PATH`` naming
``<temp dir>.auth-token``, made 0600 on first use), given to ``ray start`` and set in the
gateway's own environment before it connects. Ray otherwise decides by itself: once any
``ray.init()`` on the machine has written ``~/.ray/auth_token``, a head started without a
mode turns token auth on while a driver connecting without one is refused
(``InvalidAuthToken``), so a machine where Ray was ever used could not start the gateway.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import ray

from gridweave_runtime.local_ray import head_processes, ray_temp_dir, stop_local_head
from gridweave_runtime.secrets import without_secrets
from job_gateway.execution.actors import NAMESPACE, NODE_LABEL
from job_gateway.execution.settings import ExecutionSettings
from job_gateway.inventory import Inventory, InventorySettings

__all__ = [
    "LocalHead",
    "connect_gateway_ray",
    "connect_ray",
    "ensure_local_head",
    "head_processes",
    "local_auth_environment",
    "ray_environment",
    "ray_temp_dir",
    "stop_local_head",
]

_log = logging.getLogger(__name__)
_START_TIMEOUT_S = 120.0


def ray_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """``environment`` less the secrets and the services' credentials (names with ``TOKEN``,
    ``SECRET``, ``PASSWORD``, ``DATABASE_URL``, ``PRIVATE_KEY``, ``SERVE_KEY`` or
    ``CREDENTIALS``): what the head, and so every worker, starts with.
    Ray's own ``RAY_*`` variables stay (``RAY_AUTH_TOKEN``: every Ray process needs it)."""
    return without_secrets(environment, keep="RAY_")


@dataclass(frozen=True, slots=True)
class LocalHead:
    """A local Ray head: its GCS address, its temporary directory, whether this call started it."""

    address: str
    temp_dir: Path
    started: bool


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def local_auth_environment(temp_dir: Path) -> dict[str, str]:
    """Ray's token authentication for the local head of ``temp_dir``, with a token of its
    own beside the directory (created, 0600, on first use): the variables every process of
    that head and every driver connecting to it need."""
    path = temp_dir.with_name(temp_dir.name + ".auth-token")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(secrets.token_hex(32))
        partial.chmod(0o600)
        os.replace(partial, path)
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path)}


def _use_auth(environment: Mapping[str, str]) -> None:
    """Make this process use ``environment``'s token auth from its next connection: Ray
    reads the mode and the token once, at import, and caches both (what Ray's own
    ``ray.init`` does when it turns token auth on for a new local cluster)."""
    from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]

    os.environ.update(environment)
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def ensure_local_head(
    settings: ExecutionSettings, *, state_dir: Path, node: str, gpu_count: int
) -> LocalHead:
    """Find the local head on ``settings.ray_node_ip``:``settings.ray_port``, or start one."""
    host = str(settings.ray_node_ip)
    address = f"[{host}]:{settings.ray_port}" if ":" in host else f"{host}:{settings.ray_port}"
    temp_dir = ray_temp_dir(state_dir)
    if _reachable(host, settings.ray_port):
        return LocalHead(address, temp_dir, started=False)
    temp_dir.mkdir(parents=True, exist_ok=True)
    command = [
        str(Path(sys.executable).with_name("ray")),
        "start",
        "--head",
        f"--node-ip-address={host}",
        f"--port={settings.ray_port}",
        f"--temp-dir={temp_dir}",
        f"--num-cpus={settings.ray_num_cpus}",
        f"--num-gpus={gpu_count}",
        f"--labels={NODE_LABEL}={node}",
        f"--object-store-memory={settings.ray_object_store_mb * 1024 * 1024}",
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]
    _log.info("starting a local Ray head: %s", " ".join(command))
    started = subprocess.run(
        command,
        start_new_session=True,  # not in the gateway's process group: it outlives a kill
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=_START_TIMEOUT_S,
        # the workers inherit it: no secrets, and the head's own token auth
        env={**ray_environment(os.environ), **local_auth_environment(temp_dir)},
    )
    if started.returncode != 0:
        raise RuntimeError(
            f"ray start --head failed ({started.returncode}): {started.stderr.strip()[-2000:]}"
        )
    return LocalHead(address, temp_dir, started=True)


def connect_ray(
    ray_address: str | None,
    settings: ExecutionSettings,
    *,
    state_dir: Path,
    node: str,
    gpu_count: int,
) -> str:
    """Connect this process to Ray (``ray_address``, else the local head); the address."""
    if ray.is_initialized():  # one driver connection per process (tests share it)
        return str(ray.get_runtime_context().gcs_address)
    if ray_address is not None:
        address = ray_address
    else:
        head = ensure_local_head(settings, state_dir=state_dir, node=node, gpu_count=gpu_count)
        _use_auth(local_auth_environment(head.temp_dir))
        address = head.address
    ray.init(
        address=address,
        namespace=NAMESPACE,
        log_to_driver=False,  # user output goes to the object store, never to our log
        logging_level=logging.WARNING,
    )
    return address


def connect_gateway_ray(
    ray_address: str | None, settings: ExecutionSettings, *, state_dir: Path, inventory: Inventory
) -> str:
    """The gateway's connection: ``RAY_ADDRESS``, else the local head for this machine's node.

    The local head declares this machine's node (``GATEWAY_NODE_NAME``) and its GPUs as
    the inventory lists them.
    """
    node = InventorySettings().node_name
    listed = inventory.node(node)
    gpu_count = 0 if listed is None else len(listed.gpus)
    return connect_ray(ray_address, settings, state_dir=state_dir, node=node, gpu_count=gpu_count)
