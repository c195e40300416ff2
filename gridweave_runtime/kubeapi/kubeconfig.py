"""Kubeconfig files for the local API: the admin's client certificate, or a bearer token."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

__all__ = ["kubeconfig_for_certificate", "kubeconfig_for_token", "write_kubeconfig"]

CONTEXT = "gridweave"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _config(
    server: str, ca: bytes, user_name: str, user: dict[str, str], namespace: str | None = None
) -> dict[str, Any]:
    context = {"cluster": CONTEXT, "user": user_name}
    if namespace is not None:
        context["namespace"] = namespace  # kubectl's default: `kubectl get gwj` finds them
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca)},
            }
        ],
        "users": [{"name": user_name, "user": user}],
        "contexts": [{"name": CONTEXT, "context": context}],
        "current-context": CONTEXT,
    }


def kubeconfig_for_certificate(
    server: str, ca: bytes, cert: bytes, key: bytes, *, namespace: str | None = None
) -> dict[str, Any]:
    """A kubeconfig (as a dict) that authenticates with a client certificate; its context's
    default ``namespace``, when given, is where kubectl looks without ``-n``."""
    user = {"client-certificate-data": _b64(cert), "client-key-data": _b64(key)}
    return _config(server, ca, "admin", user, namespace)


def kubeconfig_for_token(server: str, ca: bytes, token: str, user_name: str) -> dict[str, Any]:
    """A kubeconfig (as a dict) that authenticates with a bearer token."""
    return _config(server, ca, user_name, {"token": token})


def write_kubeconfig(path: Path, config: dict[str, Any]) -> Path:
    """Write ``config`` to ``path`` (mode 0600: it holds credentials) and return the path."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(yaml.safe_dump(config, sort_keys=False))
    tmp.replace(path)
    return path
