"""The local Ray head (no ``RAY_ADDRESS``): started once, outliving a gateway killed with -9.

Two gateway processes in turn (subprocesses, since one process holds one Ray connection):
the first starts the head and launches a worker actor, then is killed with SIGKILL; the
second finds the same head on the same port, starts nothing, and adopts the actor by name.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from gridweave_runtime.local_ray import head_processes, ray_temp_dir
from job_gateway.execution import NODE_LABEL, stop_local_head
from job_gateway.execution.ray_cluster import ray_environment
from tests.support.http_server import free_port
from tests.support.kubeapi import REPO_ROOT
from tests.support.waiting import wait_until

GATEWAY = """
import json, sys, time
from pathlib import Path
import cloudpickle, ray
from gridweave_runtime.storage import LocalObjectStore, StorageConfig
from job_gateway.execution import ExecutionSettings, actor_name, connect_ray, ensure_local_head
from job_gateway.execution.actors import adopt_attempt, launch_attempt
from tests.job_gateway.execution_factories import attempt_spec
from tests.support.credentials import service_auth_env

state, port, role = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
settings = ExecutionSettings(ray_port=port, ray_num_cpus=1, ray_object_store_mb=80)
head = ensure_local_head(settings, state_dir=state, node="local-node", gpu_count=2)
connect_ray(None, settings, state_dir=state, node="local-node", gpu_count=2)
report = {"started": head.started, "nodes": [(n["Labels"], n["Resources"]) for n in ray.nodes()]}
if role == "first":
    store = LocalObjectStore(state / "objects")
    function = store.put("fn.pkl", cloudpickle.dumps(lambda: __import__("time").sleep(120)))
    spec = attempt_spec("survivor", function, StorageConfig(root=str(state / "objects")))
    # the actor's process started: a kill before GCS has created it may take it along
    ray.get(launch_attempt(spec, "local-node").ready, timeout=60)
    print(json.dumps(report), flush=True)
    time.sleep(600)  # killed with -9 by the test
elif role == "plain":
    report["task"] = ray.get(ray.remote(num_cpus=0)(lambda: "ran").remote(), timeout=60)
    print(json.dumps(report), flush=True)
else:
    report["adopted"] = adopt_attempt(actor_name("survivor", 0)) is not None
    print(json.dumps(report), flush=True)
"""


def gateway_process(
    state: Path, port: int, role: str, home: Path | None = None
) -> subprocess.Popen[str]:
    """One gateway's Ray side in a process of its own (``home``: its HOME)."""
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    if home is not None:
        environment["HOME"] = str(home)
    for name in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        environment.pop(name, None)
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(GATEWAY), str(state), str(port), role],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=environment,
    )


class TestLocalHead:
    def test_the_head_and_its_workers_survive_a_killed_gateway(self, tmp_path: Path) -> None:
        state, port = tmp_path / "state", free_port()
        temp_dir = ray_temp_dir(state)
        first = gateway_process(state, port, "first")
        try:
            assert first.stdout is not None
            started = json.loads(first.stdout.readline())
            first.send_signal(signal.SIGKILL)
            first.wait(30)
            second = gateway_process(state, port, "second")
            output, _ = second.communicate(timeout=120)
            adopted = json.loads(output)
        finally:
            first.kill()
            first.wait(30)
            if first.stdout is not None:
                first.stdout.close()
            pids = stop_local_head(temp_dir, grace_s=2.0)
            wait_until(lambda: not head_processes(temp_dir), what="the head to stop")
        assert started["started"] is True
        [(labels, resources)] = started["nodes"]
        assert labels[NODE_LABEL] == "local-node"
        assert resources["GPU"] == 2
        assert adopted["started"] is False  # the same head, found on its port
        assert adopted["adopted"] is True  # the worker outlived the killed gateway
        assert pids

    def test_a_machine_where_ray_was_used_before_still_starts_the_head(
        self, tmp_path: Path
    ) -> None:
        """Another ``ray.init()`` left ~/.ray/auth_token: the head runs token auth with a
        token of its own, and the gateway connects with it."""
        home = tmp_path / "home"
        (home / ".ray").mkdir(parents=True)
        (home / ".ray" / "auth_token").write_text("someone-elses-token-" + "0" * 32)
        state, port = tmp_path / "state", free_port()
        temp_dir = ray_temp_dir(state)
        try:
            output, _ = gateway_process(state, port, "plain", home).communicate(timeout=180)
            report = json.loads(output)
        finally:
            stop_local_head(temp_dir, grace_s=2.0)
            wait_until(lambda: not head_processes(temp_dir), what="the head to stop")
        assert (report["started"], report["task"]) == (True, "ran")
        token = temp_dir.with_name(temp_dir.name + ".auth-token")
        assert token.stat().st_mode & 0o777 == 0o600 and len(token.read_text()) == 64


class TestRayEnvironment:
    def test_the_head_and_so_every_worker_starts_without_the_gateways_secrets(self) -> None:
        gateway = {
            "PATH": "/usr/bin",
            "PYTHONPATH": "/srv/gridweave",
            "GRIDWEAVE_SERVICE_TOKEN": "the gateway's own credential",
            "GRIDWEAVE_CREDENTIALS": '{"credentials": []}',
            "GRIDWEAVE_SERVE_KEY": "the replicas' key",
            "GATEWAY_DATABASE_URL": "postgresql://gw:pw@db/gw",
            "PLATFORM_DASHBOARD_PROXY_SECRET": "s",
            "HF_TOKEN": "t",
            "RAY_AUTH_TOKEN": "ray's own",
            "RAY_ADDRESS": "127.0.0.1:6380",
        }
        assert ray_environment(gateway) == {
            "PATH": "/usr/bin",
            "PYTHONPATH": "/srv/gridweave",
            "RAY_AUTH_TOKEN": "ray's own",
            "RAY_ADDRESS": "127.0.0.1:6380",
        }
