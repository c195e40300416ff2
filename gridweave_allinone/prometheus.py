"""Prometheus in the all-in-one: the pinned binary, its scrape configuration, its process.

The binary is built from Prometheus's Go module by ``tools/prometheus/build.sh`` (the
version pinned in ``tools/prometheus/go.mod``, cached outside the repository; ``make
prometheus``), or is the one ``GRIDWEAVE_PROMETHEUS_BIN`` names. ``gridweave up`` finds it
before the services start (building it on a first run, when Go is there) and runs
``python -m gridweave_allinone.prometheus``, which writes
``<state_dir>/prometheus/prometheus.yml`` (one scrape job per service, named after it, of
its public ``/metrics`` every :data:`SCRAPE_INTERVAL_S` seconds) and then becomes
Prometheus (``exec``), its data under ``<state_dir>/prometheus/data`` kept for
:data:`RETENTION`. The supervisor stops it as any service: SIGTERM, and Prometheus closes
its database.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "BIN_ENV",
    "RETENTION",
    "SCRAPE_INTERVAL_S",
    "PrometheusUnavailable",
    "find_prometheus",
    "main",
    "prometheus_arguments",
    "scrape_config",
    "write_config",
]

BIN_ENV = "GRIDWEAVE_PROMETHEUS_BIN"
#: How often every service's /metrics is read: the charts' resolution (a rate over a
#: minute sees twelve samples).
SCRAPE_INTERVAL_S = 5.0
#: How long samples are kept: the console shows the last hour, a Grafana a few days.
RETENTION = "3d"
_BUILD_SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "prometheus" / "build.sh"


class PrometheusUnavailable(RuntimeError):
    """No Prometheus binary here, and none could be built."""


def find_prometheus(build_script: Path = _BUILD_SCRIPT, *, show_progress: bool = False) -> Path:
    """The ``prometheus`` binary: ``$GRIDWEAVE_PROMETHEUS_BIN``, or the pinned build.

    Building runs ``tools/prometheus/build.sh`` of a source checkout (cached: a warm run only
    prints the directory); ``show_progress`` lets Go's output through to this stderr.
    """
    if override := os.environ.get(BIN_ENV):
        binary = Path(override)
        if not binary.is_file():
            raise PrometheusUnavailable(f"{BIN_ENV}={override} is not a file")
        return binary
    if not build_script.exists():
        raise PrometheusUnavailable(f"no {build_script}: set {BIN_ENV} to a prometheus binary")
    result = subprocess.run(
        [str(build_script)],
        stdout=subprocess.PIPE,
        stderr=None if show_progress else subprocess.PIPE,
        text=True,
        check=False,
        timeout=3600,
    )
    if result.returncode == 127:
        raise PrometheusUnavailable("Go is not installed: Prometheus cannot be built")
    if result.returncode != 0:
        raise PrometheusUnavailable(f"{build_script} failed:\n{(result.stderr or '')[-4000:]}")
    binary = Path(result.stdout.strip().splitlines()[-1]) / "prometheus"
    if not binary.is_file():
        raise PrometheusUnavailable(f"{build_script} built no {binary}")
    return binary


def scrape_config(
    targets: Mapping[str, str], *, interval_s: float = SCRAPE_INTERVAL_S
) -> dict[str, Any]:
    """Prometheus's configuration: one job per service (``targets``: name to
    ``host:port``), its /metrics read every ``interval_s`` seconds.

    The services label their own series (``service``), so the target adds only ``job``
    and ``instance``; nothing is relabelled.
    """
    interval = f"{interval_s:g}s"
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [
            {
                "job_name": name,
                "metrics_path": "/metrics",
                "scrape_timeout": interval,
                "static_configs": [{"targets": [address]}],
            }
            for name, address in sorted(targets.items())
        ],
    }


def write_config(
    directory: Path, targets: Mapping[str, str], *, interval_s: float = SCRAPE_INTERVAL_S
) -> Path:
    """``directory/prometheus.yml`` for ``targets`` (JSON, which is YAML), written anew."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "prometheus.yml"
    config = scrape_config(targets, interval_s=interval_s)
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return path


def prometheus_arguments(
    config: Path, data_dir: Path, *, listen: str, retention: str = RETENTION
) -> list[str]:
    """The command-line flags of a Prometheus serving ``listen`` (``host:port``)."""
    return [
        f"--config.file={config}",
        f"--storage.tsdb.path={data_dir}",
        f"--storage.tsdb.retention.time={retention}",
        f"--web.listen-address={listen}",
    ]


def main(argv: list[str] | None = None) -> None:
    """``python -m gridweave_allinone.prometheus``: write the configuration, become Prometheus."""
    parser = argparse.ArgumentParser(prog="python -m gridweave_allinone.prometheus")
    parser.add_argument("--binary", type=Path, required=True)
    parser.add_argument("--directory", type=Path, required=True, help="config and data")
    parser.add_argument("--listen", required=True, help="host:port")
    parser.add_argument("--targets", required=True, help="JSON: service name to host:port")
    parser.add_argument("--scrape-interval", type=float, default=SCRAPE_INTERVAL_S)
    parser.add_argument("--retention", default=RETENTION)
    arguments = parser.parse_args(argv)
    targets = json.loads(arguments.targets)
    config = write_config(arguments.directory, targets, interval_s=arguments.scrape_interval)
    flags = prometheus_arguments(
        config, arguments.directory / "data", listen=arguments.listen, retention=arguments.retention
    )
    binary = str(arguments.binary)
    # Prometheus reads its working directory as it starts (web/ui's init, built without
    # embedded assets) and panics when it is gone, as a cluster node's mount namespace
    # leaves the supervisor's: its own directory is always there.
    os.chdir(arguments.directory)
    os.execv(binary, [binary, *flags])


if __name__ == "__main__":
    main()
