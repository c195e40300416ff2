"""A job container's way out (GATEWAY_JOB_NETWORK=egress), on the real runtime (runc),
iptables and iproute2: the internet and the node's resolvers, never the node itself, its
networks or a private range; no change of its own network; nothing left when it is gone."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import cloudpickle
import pytest

from job_gateway.sandbox import network
from job_gateway.sandbox.attempt import warm_containers
from job_gateway.sandbox.container_names import sweep_orphans
from job_gateway.sandbox.network import Egress, NetworkLink
from job_gateway.sandbox.oci import ContainerLimits, container_config
from job_gateway.sandbox.settings import SandboxConfig
from tests.job_gateway.sandbox import probes
from tests.support.sandbox import run_function, sandbox_config
from tests.support.unavailable import fail_or_skip
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(180)

#: What pip needs: the index and the files (this machine reaches both).
OUTSIDE = [["pypi.org", 443], ["files.pythonhosted.org", 443]]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxConfig]:
    """The node's sandbox with egress for every job."""
    missing = [
        tool for tool in ("iptables", "iptables-save", "ip", "nsenter") if not shutil.which(tool)
    ]
    if missing:
        fail_or_skip("egress network", RuntimeError(f"missing {', '.join(missing)} (make sandbox)"))
    cloudpickle.register_pickle_by_value(probes)
    try:
        yield dataclasses.replace(sandbox_config(), job_network="egress")
    finally:
        warm_containers.close()
        cloudpickle.unregister_pickle_by_value(probes)


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on every address of the node, as a service bound to 0.0.0.0 is."""
    server = socket.create_server(("0.0.0.0", 0))
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


def node_address() -> str:
    """The node's own non-loopback IPv4 address (its LAN's), found at run time."""
    shown = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "scope", "global"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for line in shown.splitlines():
        words = line.split()
        address = ipaddress.IPv4Interface(words[words.index("inet") + 1]).ip
        if address not in ipaddress.IPv4Network(network.DEFAULT_POOL):
            return str(address)
    pytest.fail(f"the node has no non-loopback IPv4 address: {shown}")


def host_links() -> list[str]:
    """The node's links that are a container's veth."""
    shown = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    names = [line.split(":")[1].strip().split("@")[0] for line in shown.stdout.splitlines()]
    return [name for name in names if name.startswith(("gwv", "gwc"))]


def rules_count() -> int:
    saved = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True)
    return sum(line.startswith("-A ") for line in saved.stdout.splitlines())


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


class TestTheWayOut:
    def test_it_resolves_names_and_reaches_what_pip_needs(self, sandbox: SandboxConfig) -> None:
        names = [host for host, _ in OUTSIDE]
        resolved = run_function(sandbox, probes.resolve, names).value
        assert all(resolved[name] for name in names), resolved
        seen = run_function(sandbox, probes.connect_to, OUTSIDE).value
        assert set(seen.values()) == {"connected"}, seen

    def test_it_has_its_own_link_and_the_nodes_resolvers(self, sandbox: SandboxConfig) -> None:
        view = run_function(sandbox, probes.own_view).value
        assert view["interfaces"] == ["lo", "eth0"]
        seen = run_function(sandbox, probes.read_paths, ["/etc/resolv.conf"]).value
        resolvers = network.node_resolvers()
        assert resolvers and all(r in seen["/etc/resolv.conf"] for r in resolvers), seen


class TestWhatItNeverReaches:
    def test_not_the_nodes_loopback_own_address_or_its_end_of_the_link(
        self, sandbox: SandboxConfig, listener: int
    ) -> None:
        own = node_address()
        with socket.create_connection((own, listener), timeout=2):
            pass  # the node reaches it on every address
        targets: list[list[object]] = [
            ["127.0.0.1", listener],  # the container's own loopback: nobody listens there
            [own, listener],
            ["gateway", listener],
            [own, 22],
        ]
        seen = run_function(sandbox, probes.connect_to, targets).value
        assert not [target for target, what in seen.items() if what == "connected"], seen
        assert seen[f"127.0.0.1:{listener}"].startswith("ConnectionRefusedError")

    def test_not_a_private_link_local_or_cgnat_address(self, sandbox: SandboxConfig) -> None:
        resolver = network.node_resolvers()[0]  # reachable on port 53 only
        targets: list[list[object]] = [
            [resolver, 80],
            ["10.1.2.3", 80],
            ["172.16.0.1", 80],
            ["192.168.0.1", 80],
            ["169.254.169.254", 80],  # a cloud's metadata service
            ["100.64.0.1", 80],
        ]
        seen = run_function(sandbox, probes.connect_to, targets, 2.0).value
        assert not [target for target, what in seen.items() if what == "connected"], seen

    def test_it_cannot_change_its_routes_address_or_link(self, sandbox: SandboxConfig) -> None:
        seen = run_function(sandbox, probes.change_network).value
        assert seen["route"] == seen["address"] == seen["link"] == "PermissionError", seen
        for what in ("route", "address", "link"):  # nor from a user namespace of its own
            assert seen.get(f"userns-{what}", "PermissionError") == "PermissionError", seen


class TestWithoutEgress:
    def test_the_default_is_only_a_loopback(self, sandbox: SandboxConfig) -> None:
        plain = dataclasses.replace(sandbox, job_network="none")
        assert run_function(plain, probes.own_view).value["interfaces"] == ["lo"]
        seen = run_function(plain, probes.connect_to, OUTSIDE[:1], 2.0).value
        assert seen["pypi.org:443"] != "connected"


class TestNothingLeftBehind:
    def test_a_closed_container_leaves_no_link_rule_or_namespace(
        self, sandbox: SandboxConfig
    ) -> None:
        run_function(sandbox, probes.own_view, user="sandbox-egress-left")  # rules in place
        warm_containers.close()
        wait_until(lambda: not host_links(), what="the veth pairs are gone")
        rules, netns = rules_count(), namespaces()
        for user in ("sandbox-egress-left", "sandbox-egress-other"):
            assert run_function(sandbox, probes.own_view, user=user).value["interfaces"] == [
                "lo",
                "eth0",
            ]
        assert len(host_links()) == 2  # each warm container's end
        warm_containers.close()
        wait_until(lambda: not host_links(), what="the veth pairs are gone")
        assert rules_count() == rules and namespaces() == netns
        assert not list((sandbox.state_dir / "network" / "links").iterdir())

    def test_the_sweep_deletes_the_link_of_a_dead_worker(self, sandbox: SandboxConfig) -> None:
        dead = f"gw-{_dead_pid()}-1-1"
        link = network.attach(sandbox.state_dir, sandbox.egress, dead)
        assert link.host_veth in host_links()
        assert dead in sweep_orphans(sandbox.runtime, sandbox.state_dir)
        assert link.host_veth not in host_links() and link.peer_veth not in host_links()
        assert not (sandbox.state_dir / "network" / "links" / str(link.slot)).exists()


class TestTheRules:
    def test_installed_once_and_again_when_flushed(self, sandbox: SandboxConfig) -> None:
        warm_containers.close()  # every container below is new: it checks the rules
        run_function(sandbox, probes.own_view, user="sandbox-egress-rules")
        rules = rules_count()
        run_function(sandbox, probes.own_view, user="sandbox-egress-rules-2")
        assert rules_count() == rules  # idempotent: a container adds none
        subprocess.run(["iptables", "-F", "GW-EGRESS-FWD"], check=True)
        warm_containers.close()
        seen = run_function(sandbox, probes.connect_to, [["10.1.2.3", 80]], 2.0).value
        assert seen["10.1.2.3:80"] != "connected"  # a new container put them back first
        assert rules_count() == rules

    def test_what_they_refuse_and_allow(self) -> None:
        rules = network.egress_rules(
            pool=ipaddress.IPv4Network("10.234.0.0/16"),
            blocked=["198.51.100.0/24"],
            resolvers=["10.255.255.53"],
        )
        forward = [line for line in rules.splitlines() if line.startswith("-A GW-EGRESS-FWD")]
        dns = forward.index(
            "-A GW-EGRESS-FWD -i gwv+ -d 10.255.255.53/32 -p udp -m udp --dport 53 -j ACCEPT"
        )
        refused = forward.index(
            "-A GW-EGRESS-FWD -i gwv+ -d 10.0.0.0/8 -j REJECT --reject-with icmp-admin-prohibited"
        )
        assert dns < refused < forward.index("-A GW-EGRESS-FWD -i gwv+ -j ACCEPT")
        assert "-d 198.51.100.0/24" in rules and "-d 100.64.0.0/10" in rules
        assert "-A GW-EGRESS-IN -j REJECT --reject-with icmp-admin-prohibited" in rules
        assert "-A GW-EGRESS-NAT -s 10.234.0.0/16 ! -o gwv+ -j MASQUERADE" in rules


class TestTheConfig:
    def test_a_link_adds_the_hook_and_the_resolvers_never_a_namespace_path(self) -> None:
        link = NetworkLink(3, "10.234.0.14/30", "10.234.0.13", Path("/state/resolv.conf"))
        config = container_config(
            args=["python3"],
            rootfs=Path("/image"),
            runner_dir=Path("/runner"),
            host_uid=2_000_001,
            limits=ContainerLimits(512, 1.0, 64, 100),
            environment={},
            network=link,
        )
        (hook,) = config["hooks"]["createRuntime"]
        assert hook["args"][-3:] == ["gwc3", "10.234.0.14/30", "10.234.0.13"]
        resolv = [m for m in config["mounts"] if m["destination"] == "/etc/resolv.conf"]
        assert resolv[0]["source"] == "/state/resolv.conf" and "ro" in resolv[0]["options"]
        assert {"type": "network"} in config["linux"]["namespaces"]  # its own, the runtime's

    def test_egress_is_part_of_the_warm_containers_key(self) -> None:
        assert Egress() != Egress(blocked=("198.51.100.0/24",))


def _dead_pid() -> int:
    """A pid no process has (past the kernel's largest)."""
    return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1 + os.getpid() % 7
