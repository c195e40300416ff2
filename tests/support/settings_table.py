"""The README's configuration table, made from the settings classes themselves.

Every environment variable a Gridweave process reads is a field of a pydantic-settings class
(or one of the few plain variables listed in :data:`PLAIN_VARIABLES`); this module renders
them as Markdown, and ``tests/test_readme.py`` fails when the README's copy is stale::

    .venv/bin/python -m tests.support.settings_table --write README.md
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import AliasChoices
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

from chain_service.settings import ChainSettings
from credit_service.settings import CreditSettings
from faucet_service.settings import FaucetSettings
from gridweave_allinone.dashboard.settings import DashboardSettings
from gridweave_allinone.prometheus import BIN_ENV as PROMETHEUS_BIN_ENV
from gridweave_allinone.settings import AllInOneSettings
from gridweave_runtime.kubeapi import BIN_ENV
from gridweave_runtime.settings import ServiceSettings
from job_gateway.endpoints.settings import EndpointSettings
from job_gateway.execution.settings import ExecutionSettings
from job_gateway.inventory.settings import InventorySettings
from job_gateway.sandbox.settings import SandboxSettings
from job_gateway.settings import GatewaySettings
from kuberay_service.settings import KubeRaySettings
from metering_service.settings import MeteringSettings
from platform_service.settings import PlatformSettings
from registry_service.settings import RegistrySettings

__all__ = ["START", "END", "render", "replace_table"]

START = "<!-- settings-table:start (python -m tests.support.settings_table --write README.md) -->"
END = "<!-- settings-table:end -->"

#: Who reads what: the all-in-one, then each service with its settings classes.
READERS: list[tuple[str, list[type[BaseSettings]]]] = [
    ("gridweave up", [AllInOneSettings]),
    ("dashboard (gridweave up)", [DashboardSettings]),
    ("platform_service", [PlatformSettings]),
    (
        "job_gateway",
        [GatewaySettings, InventorySettings, ExecutionSettings, SandboxSettings, EndpointSettings],
    ),
    ("metering_service", [MeteringSettings]),
    ("credit_service", [CreditSettings]),
    ("faucet_service", [FaucetSettings]),
    ("chain_service", [ChainSettings]),
    ("kuberay_service", [KubeRaySettings]),
    ("registry_service", [RegistrySettings]),
]

#: Variables read without a settings class: (name, reader, default, meaning).
PLAIN_VARIABLES = [
    ("GRIDWEAVE_URL", "SDK, CLI", "http://127.0.0.1:8100", "The platform's URL."),
    ("GRIDWEAVE_API_KEY", "SDK, CLI", "", "The API key (over the config file)."),
    (
        "GRIDWEAVE_CONFIG",
        "SDK, CLI",
        "~/.config/gridweave/config.toml",
        "The file `gridweave login` writes (URL and API key, mode 0600).",
    ),
    (
        BIN_ENV,
        "gridweave up, tests",
        "",
        "A directory with etcd, kube-apiserver and kubectl (skips the build).",
    ),
    (
        "GRIDWEAVE_SANDBOX_CACHE",
        "make sandbox, job_gateway",
        "/var/cache/gridweave/sandbox",
        "Where tools/sandbox-image/build.sh keeps the default job image, and a node the images "
        "its jobs named and their pip environments (outside any home directory: every job's "
        "uid passes through to it).",
    ),
    (
        "GRIDWEAVE_KUBEAPI_CACHE",
        "gridweave up, tests",
        "~/.cache/gridweave/kubeapi",
        "Where tools/kubeapi/build.sh caches the binaries it builds.",
    ),
    (
        PROMETHEUS_BIN_ENV,
        "gridweave up, tests",
        "",
        "A prometheus binary (skips the build of tools/prometheus).",
    ),
    (
        "GRIDWEAVE_PROMETHEUS_CACHE",
        "gridweave up, tests",
        "~/.cache/gridweave/prometheus",
        "Where tools/prometheus/build.sh caches the binary it builds.",
    ),
]


def _env_names(settings: type[BaseSettings], name: str, field: FieldInfo) -> list[str]:
    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    if isinstance(alias, str):
        return [alias]
    prefix = str(settings.model_config.get("env_prefix", ""))
    return [f"{prefix}{name}".upper()]


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        factory = getattr(field.default_factory, "__name__", "computed")
        return {
            "default_state_dir": "~/.gridweave",
            "gethostname": "the hostname",
            "default_rootfs": "/var/cache/gridweave/sandbox/base/rootfs",
            "image_cache": "/var/cache/gridweave/sandbox/images",
            "pip_cache": "/var/cache/gridweave/sandbox/pip",
            "driver_search": '["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", '
            '"/usr/lib64", "/usr/lib", "/usr/bin"]',
        }.get(factory, factory)
    if field.default is PydanticUndefined or field.default is None:
        return ""
    value: Any = field.default
    if hasattr(value, "get_secret_value"):
        return "(secret)"
    text = str(value.value if hasattr(value, "value") else value)
    return text if len(text) <= 40 else "(see the description)"


def _cell(text: str) -> str:
    text = re.sub(r"\s+", " ", text).replace("|", "\\|").strip()
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _meaning(env: str, field: FieldInfo) -> str:
    text = field.description or ""
    return text.removeprefix(f"{env}: ").removeprefix(f"{env}.").strip() or text


def _rows() -> Iterator[tuple[str, str, str, str]]:
    """(variable, its readers, default, meaning), in the order of first appearance."""
    shared = set(ServiceSettings.model_fields)
    found: dict[str, tuple[list[str], str, str]] = {}
    for reader, classes in READERS:
        for settings in classes:
            for name, field in settings.model_fields.items():
                if name in shared and issubclass(settings, ServiceSettings):
                    continue  # the fields every service has: their own table
                if isinstance(field.annotation, type) and issubclass(
                    field.annotation, BaseSettings
                ):
                    continue  # settings of their own, listed as such
                for env in _env_names(settings, name, field):
                    readers = found.setdefault(env, ([], _default(field), _meaning(env, field)))[0]
                    if reader not in readers:
                        readers.append(reader)
    for env, (readers, default, meaning) in found.items():
        yield env, ", ".join(readers), default, meaning
    yield from PLAIN_VARIABLES


def _shared_rows() -> Iterator[tuple[str, str, str]]:
    for name, field in ServiceSettings.model_fields.items():
        alias = field.validation_alias
        env = (
            str(alias.choices[0]) if isinstance(alias, AliasChoices) else f"<PREFIX>{name.upper()}"
        )
        yield env, _default(field), _meaning(env, field)


def render() -> str:
    """The Markdown between the markers."""
    prefixes = ", ".join(
        f"`{settings.model_config.get('env_prefix')}` ({reader})"
        for reader, classes in READERS[1:]
        for settings in classes[:1]
    )
    lines = [
        "Every service reads these, each with its own prefix: " + prefixes + ".",
        "",
        "| variable | default | meaning |",
        "| --- | --- | --- |",
        *(
            f"| `{env}` | {_cell(default)} | {_cell(meaning)} |"
            for env, default, meaning in _shared_rows()
        ),
        "",
        "And each process's own:",
        "",
        "| variable | read by | default | meaning |",
        "| --- | --- | --- | --- |",
        *(
            f"| `{env}` | {reader} | {_cell(default)} | {_cell(meaning)} |"
            for env, reader, default, meaning in _rows()
        ),
    ]
    return "\n".join(lines)


def replace_table(text: str) -> str:
    """``text`` with the part between the markers made current."""
    start, end = text.index(START) + len(START), text.index(END)
    return f"{text[:start]}\n{render()}\n{text[end:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.settings_table")
    parser.add_argument("--write", type=Path, help="the README to bring up to date")
    arguments = parser.parse_args(argv)
    if arguments.write is None:
        print(render())
        return 0
    path: Path = arguments.write
    path.write_text(replace_table(path.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
