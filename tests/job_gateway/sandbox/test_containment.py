"""A hostile job in its container, on the real runtime (runc) and the default image: each
thing the issue's attacker did from a job is refused or contained."""

from __future__ import annotations

import dataclasses
import os
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import cloudpickle
import pytest

from job_gateway.sandbox.settings import SandboxConfig
from tests.job_gateway.sandbox import probes
from tests.support.sandbox import run_function, sandbox_config, stand_in_devices

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxConfig]:
    cloudpickle.register_pickle_by_value(probes)
    try:
        yield sandbox_config()
    finally:
        cloudpickle.unregister_pickle_by_value(probes)


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on the host's loopback, as every Gridweave service is."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        server.close()


class TestWhatTheJobSees:
    def test_its_own_uid_processes_network_and_home(self, sandbox: SandboxConfig) -> None:
        view = run_function(sandbox, probes.own_view).value
        container_uid, host_uid, size = (int(n) for n in view["uid_map"])
        assert container_uid == 0 and size == 1
        assert host_uid not in (0, os.getuid())  # never root, never the services' uid
        assert max(view["pids"]) < 50  # its own pid namespace, not the host's processes
        assert view["interfaces"] == ["lo"]  # a network of its own: only a loopback
        assert view["cwd"] == "/scratch"

    def test_two_users_run_as_two_uids_and_one_user_always_as_one(
        self, sandbox: SandboxConfig
    ) -> None:
        uids = [
            int(run_function(sandbox, probes.own_view, user=user).value["uid_map"][1])
            for user in ("sandbox-test-a", "sandbox-test-b", "sandbox-test-a")
        ]
        assert uids[0] != uids[1]
        assert uids[0] == uids[2]

    def test_no_secret_of_the_host_reaches_its_environment(
        self, sandbox: SandboxConfig, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("GRIDWEAVE_SERVICE_TOKEN", "the-platform-token")
        environ = run_function(sandbox, probes.own_view).value["environ"]
        assert "GRIDWEAVE_SERVICE_TOKEN" not in environ
        assert not [value for value in environ.values() if "the-platform-token" in value]
        others = run_function(sandbox, probes.other_environments).value
        assert not [text for text in others if "the-platform-token" in text]


class TestTheHostsFiles:
    def test_the_state_directory_and_secrets_are_not_there(self, sandbox: SandboxConfig) -> None:
        state = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="gw-state-"))
        try:
            state.chmod(0o755)
            token = state / "platform-token"
            token.write_text("the-platform-token")
            token.chmod(0o644)  # even readable by anyone on the host
            seen = run_function(
                sandbox,
                probes.read_paths,
                [str(token), str(sandbox.state_dir / "uids.json"), "/etc/shadow", "/root/.bashrc"],
            ).value
        finally:
            token.unlink()
            state.rmdir()
        assert seen[str(token)] == "FileNotFoundError"
        assert seen[str(sandbox.state_dir / "uids.json")] == "FileNotFoundError"
        assert not [path for path, what in seen.items() if what.startswith("read:")]

    def test_a_unix_socket_of_the_host_cannot_be_reached(self, sandbox: SandboxConfig) -> None:
        # where the embedded PostgreSQL listens, e.g. /tmp/.s.PGSQL.5432
        path = f"/tmp/.s.PGSQL.{uuid.uuid4().int % 60000 + 1024}"
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen()
        os.chmod(path, 0o777)
        try:
            assert run_function(sandbox, probes.connect_unix, path).value == "FileNotFoundError"
        finally:
            server.close()
            os.unlink(path)

    def test_only_scratch_and_tmp_are_writable(self, sandbox: SandboxConfig) -> None:
        seen = run_function(
            sandbox,
            probes.write_paths,
            ["/scratch/a", "/tmp/b", "/etc/c", "/usr/lib/d", "/opt/gridweave/e", "/f"],
        ).value
        assert seen["/scratch/a"] == "ok" and seen["/tmp/b"] == "ok"
        for path in ("/etc/c", "/usr/lib/d", "/opt/gridweave/e", "/f"):
            assert seen[path] == "OSError", (path, seen[path])  # EROFS: a read-only root


class TestTheNetwork:
    def test_no_service_port_on_the_host_is_reachable(
        self, sandbox: SandboxConfig, listener: int
    ) -> None:
        with socket.create_connection(("127.0.0.1", listener), timeout=2):
            pass  # the host reaches it
        ports = [listener, 8100, 8200, 8300, 8400, 8500, 8800, 6380, 5432]
        seen = run_function(sandbox, probes.connect_all, ports).value
        assert set(seen.values()) == {"ConnectionRefusedError"}, seen


class TestWhatOutlivesIt:
    def test_a_setsid_sleep_dies_with_the_job(self, sandbox: SandboxConfig) -> None:
        marker = f"gw-left-{uuid.uuid4().hex[:8]}"
        run = run_function(sandbox, probes.leave_behind, marker, user="sandbox-leaver")
        assert run.value is True  # it ran when the function returned
        assert not _host_processes_with(marker)  # its container was deleted with it

    def test_a_fork_bomb_meets_the_pids_limit(self, sandbox: SandboxConfig) -> None:
        small = dataclasses.replace(sandbox, pids=64)
        result = run_function(small, probes.fork_bomb, 10_000).value
        assert result["refused"] == "BlockingIOError"  # EAGAIN from the pids cgroup
        assert result["started"] < 64

    def test_past_its_memory_it_is_killed_out_of_memory(self, sandbox: SandboxConfig) -> None:
        small = dataclasses.replace(sandbox, memory_mb_per_gpu=128)
        run = run_function(small, probes.allocate, 512).run
        assert run.header is None
        assert run.oom_killed
        assert run.signal == 9

    def test_within_its_memory_it_runs(self, sandbox: SandboxConfig) -> None:
        small = dataclasses.replace(sandbox, memory_mb_per_gpu=256)
        run = run_function(small, probes.allocate, 64)
        assert run.value == 64
        assert not run.run.oom_killed


class TestGpus:
    NODES = ["nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl", "nvidia-uvm"]

    def test_only_the_allocated_nvidia_gpus_are_there(self, sandbox: SandboxConfig) -> None:
        with stand_in_devices(self.NODES) as device_dir:
            config = dataclasses.replace(sandbox, device_dir=device_dir)
            seen = run_function(config, probes.devices, gpu_indices=(1, 3)).value
        gpus = [name for name in seen["devices"] if name.startswith("/dev/nvidia")]
        assert gpus == ["/dev/nvidia-uvm", "/dev/nvidia1", "/dev/nvidia3", "/dev/nvidiactl"]
        assert seen["cuda"] == "0,1"  # numbered from 0 inside, as the driver enumerates them

    def test_only_the_allocated_amd_gpu_is_there(self, sandbox: SandboxConfig) -> None:
        nodes = ["kfd", "dri/renderD128", "dri/renderD129", "dri/renderD130"]
        with stand_in_devices(nodes) as device_dir:
            config = dataclasses.replace(sandbox, device_dir=device_dir)
            seen = run_function(
                config,
                probes.devices,
                vendor="amd",
                gpu_indices=(2,),
                environment={"HIP_VISIBLE_DEVICES": "2"},
            ).value
        assert [n for n in seen["devices"] if n.startswith(("/dev/kfd", "/dev/dri"))] == [
            "/dev/dri/renderD130",
            "/dev/kfd",
        ]
        assert seen["hip"] == "0"

    def test_a_node_without_device_nodes_shows_none(self, sandbox: SandboxConfig) -> None:
        with stand_in_devices([]) as device_dir:
            config = dataclasses.replace(sandbox, device_dir=device_dir)
            seen = run_function(config, probes.devices, gpu_indices=(0,)).value
        assert not [n for n in seen["devices"] if "nvidia" in n]


class TestNvidiaDriver:
    """The node's driver files reach a container with NVIDIA GPUs, and only those."""

    @pytest.fixture
    def driver_search(self, tmp_path: Path) -> tuple[Path, ...]:
        libraries, binaries = tmp_path / "lib", tmp_path / "bin"
        libraries.mkdir()
        binaries.mkdir()
        (libraries / "libcuda.so.550.54.14").write_text("stand-in libcuda")
        (libraries / "libcuda.so.1").symlink_to("libcuda.so.550.54.14")
        (libraries / "libnvidia-ml.so.1").write_text("stand-in nvml")
        (libraries / "libssl.so.3").write_text("not the driver's")
        (libraries / "libnvidia-ml.so.2").symlink_to("/nowhere")  # dangling: left out
        smi = binaries / "nvidia-smi"
        smi.write_text("#!/bin/sh\necho stand-in nvidia-smi\n")
        smi.chmod(0o700)  # root's alone on the host; the copy is every uid's
        for path in (tmp_path, libraries, binaries):
            path.chmod(0o700)
        return (libraries, binaries)

    def test_an_nvidia_job_gets_the_drivers_files_and_nothing_else(
        self, sandbox: SandboxConfig, driver_search: tuple[Path, ...]
    ) -> None:
        with stand_in_devices(TestGpus.NODES) as device_dir:
            config = dataclasses.replace(
                sandbox, device_dir=device_dir, driver_search=driver_search
            )
            seen = run_function(config, probes.driver_view, gpu_indices=(2,)).value
        assert seen == {
            "files": [
                "libcuda.so.1",
                "libcuda.so.550.54.14",
                "libnvidia-ml.so.1",
                "nvidia-smi",
            ],
            "libcuda": "stand-in libcuda",
            "library_path": "/opt/gridweave/driver",
            "smi": "stand-in nvidia-smi\n",
        }

    def test_jobs_without_nvidia_gpus_get_none(
        self, sandbox: SandboxConfig, driver_search: tuple[Path, ...]
    ) -> None:
        with stand_in_devices(["kfd", "dri/renderD128"]) as device_dir:
            config = dataclasses.replace(
                sandbox, device_dir=device_dir, driver_search=driver_search
            )
            amd = run_function(
                config,
                probes.driver_view,
                vendor="amd",
                gpu_indices=(0,),
                environment={"HIP_VISIBLE_DEVICES": "0"},
            ).value
            simulated = run_function(config, probes.driver_view, gpu_indices=(0,)).value
        for seen in (amd, simulated):
            assert seen["files"] == [] and seen["libcuda"] is None and seen["smi"] is None


class TestTwoUsersOnOneNode:
    def test_one_cannot_read_the_others_scratch(self, sandbox: SandboxConfig) -> None:
        secret = f"secret-{uuid.uuid4().hex}"
        results: dict[str, object] = {}

        def owner() -> None:
            results["a"] = run_function(
                sandbox, probes.write_scratch_and_wait, secret, "ready", 3.0, user="sandbox-test-a"
            )

        thread = threading.Thread(target=owner)
        thread.start()
        try:
            time.sleep(1.5)  # a's container is up and has written its secret
            hits = run_function(
                sandbox, probes.look_for_secret, secret, user="sandbox-test-b"
            ).value
        finally:
            thread.join(30)
        assert results["a"].value == secret  # type: ignore[attr-defined]
        assert hits == []


def _host_processes_with(marker: str) -> list[int]:
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


class TestWarmContainers:
    def test_an_attempt_reuses_its_owners_clean_container_with_an_empty_scratch(
        self, sandbox: SandboxConfig
    ) -> None:
        first = run_function(sandbox, probes.scratch_then_pid, "one", user="sandbox-warm")
        second = run_function(sandbox, probes.scratch_then_pid, "two", user="sandbox-warm")
        assert first.value["before"] == [] and second.value["before"] == []
        assert _container_of(first) == _container_of(second)  # the same warm container

    def test_a_container_left_unclean_is_not_reused(self, sandbox: SandboxConfig) -> None:
        first = run_function(sandbox, probes.own_view, user="sandbox-unclean")
        run_function(sandbox, probes.leave_behind, "gw-unclean", user="sandbox-unclean")
        after = run_function(sandbox, probes.own_view, user="sandbox-unclean")
        assert _container_of(first) != _container_of(after)

    def test_another_user_never_gets_a_warm_container(self, sandbox: SandboxConfig) -> None:
        a = run_function(sandbox, probes.own_view, user="sandbox-test-a")
        b = run_function(sandbox, probes.own_view, user="sandbox-test-b")
        assert _container_of(a) != _container_of(b)


class TestUnsandboxed:
    def test_the_plain_runner_never_empties_the_hosts_directories(
        self, sandbox: SandboxConfig
    ) -> None:
        plain = dataclasses.replace(sandbox, runtime="none")
        with tempfile.NamedTemporaryFile(dir="/tmp", prefix="gw-keep-") as kept:
            assert run_function(plain, probes.run_plain_then_leave, kept.name).value is True
            assert run_function(plain, probes.run_plain_then_leave, kept.name).value is True
            assert Path(kept.name).exists()


def _container_of(run: object) -> str:
    """The hostname is per container (its uts namespace): the container's name."""
    value = run.value  # type: ignore[attr-defined]
    return str(value["hostname"])
