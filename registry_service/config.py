"""The registry's configuration file, written from the settings before each start."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from gridweave_clients.platform.registry import TOKEN_ISSUER
from registry_service.settings import RegistrySettings

__all__ = ["registry_config", "write_config"]


#: Seconds the registry waits for requests under way when it is stopped (under the
#: supervisor's own stop timeout).
DRAIN_SECONDS = 10


def registry_config(
    settings: RegistrySettings, *, jwks_file: Path, http_secret: str, read_only: bool
) -> dict[str, Any]:
    """The registry's configuration: filesystem storage, deletes, token auth, notifications."""
    platform = settings.platform_url.rstrip("/")
    config: dict[str, Any] = {
        "version": 0.1,
        "log": {"level": "info", "formatter": "text", "accesslog": {"disabled": True}},
        "storage": {
            "filesystem": {"rootdirectory": str(settings.resolved_storage_dir())},
            "delete": {"enabled": True},
            "cache": {"blobdescriptor": "inmemory"},
            "maintenance": {
                "uploadpurging": {
                    "enabled": True,
                    "age": "24h",
                    "interval": "1h",
                    "dryrun": False,
                },
                "readonly": {"enabled": read_only},
            },
        },
        "http": {
            "addr": f"{settings.host}:{settings.port}",
            "secret": http_secret,
            "headers": {"X-Content-Type-Options": ["nosniff"]},
            # a restart (into or out of read-only) lets requests under way finish first
            "draintimeout": f"{DRAIN_SECONDS}s",
        },
        "notifications": {
            "endpoints": [
                {
                    "name": "gridweave-platform",
                    "url": f"{platform}/v1/registry/events",
                    "headers": {"Authorization": [f"Bearer {settings.own_token()}"]},
                    "timeout": "5s",
                    "threshold": 10,
                    "backoff": "1s",
                    "ignore": {"actions": ["pull"]},
                }
            ]
        },
    }
    if settings.auth:
        config["auth"] = {
            "token": {
                "realm": settings.resolved_token_realm(),
                "service": settings.service,
                "issuer": TOKEN_ISSUER,
                "jwks": str(jwks_file),
                "signingalgorithms": ["ES256"],
            }
        }
    return config


def write_config(path: Path, config: dict[str, Any]) -> None:
    """Write ``config`` to ``path`` (mode 0600: it carries the registry's token), replaced whole."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f".{path.name}.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        yaml.safe_dump(config, file, sort_keys=False)
    partial.replace(path)
