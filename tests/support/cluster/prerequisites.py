"""What the test cluster needs on the host: root, the namespace tools, userspace WireGuard
and Debian's Docker daemon (``make cluster-tools`` installs them)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.support.unavailable import fail_or_skip

__all__ = ["CLUSTER_TOOLS", "require_cluster_tools"]

#: command -> the Debian package that has it (the Makefile's CLUSTER_TOOLS say the same)
CLUSTER_TOOLS = {
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "ip": "iproute2",
    "iptables-save": "iptables",
    "wg": "wireguard-tools",
    "wg-quick": "wireguard-tools",
    "wireguard-go": "wireguard-go",
    "dockerd": "docker.io",
    "docker": "docker.io",
    "containerd": "containerd",
    "runc": "runc",
    "curl": "curl",
    "openssl": "openssl",
}


class ClusterUnavailable(Exception):
    """The host cannot run the test cluster."""


def require_cluster_tools() -> None:
    """Fails under CI=true (skips elsewhere) when the cluster cannot run here."""
    try:
        if os.geteuid() != 0:
            raise ClusterUnavailable("the test cluster makes namespaces: it runs as root")
        missing = sorted({pkg for tool, pkg in CLUSTER_TOOLS.items() if shutil.which(tool) is None})
        if missing:
            raise ClusterUnavailable(f"missing {', '.join(missing)} (make cluster-tools)")
        if not Path("/dev/net/tun").exists():
            raise ClusterUnavailable("no /dev/net/tun: userspace WireGuard needs it")
    except ClusterUnavailable as exc:
        fail_or_skip("test cluster", exc)
