"""How long the local Kubernetes API takes to start: etcd + kube-apiserver to /readyz, then CRDs.

Each round starts :class:`gridweave_runtime.kubeapi.KubeAPIServer` on a fresh directory
(etcd without fsync, as the tests run it) and times three steps: ``start()`` until
``/readyz`` answers 200 (PKI made, both processes spawned), creating the ``gridweave``
namespace, and installing both CRDs until Established and published in the OpenAPI
document. Then the same directory is started again (a restart: data and PKI kept).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.report import machine_line, write_section
from gridweave_runtime.kubeapi import (
    KubeAPIServer,
    api_client_for,
    ensure_namespace,
    install_crds,
)
from tests.support.kubeapi import CRD_MANIFESTS, build_binaries


def one_round(binaries: Path) -> dict[str, float]:
    """Seconds for each step of one cold start and one restart."""
    with tempfile.TemporaryDirectory(prefix="gridweave-bench-kubeapi-") as tmp:
        server = KubeAPIServer(Path(tmp), binaries=binaries, durable=False, namespaces=())
        t0 = time.perf_counter()
        server.start()
        t1 = time.perf_counter()
        try:
            with api_client_for(server.kubeconfig) as api_client:
                ensure_namespace(api_client, "gridweave")
                t2 = time.perf_counter()
                install_crds(api_client, CRD_MANIFESTS)
                t3 = time.perf_counter()
        finally:
            server.stop()
        t4 = time.perf_counter()
        server.start()
        t5 = time.perf_counter()
        server.stop()
    return {
        "ready": t1 - t0,
        "namespace": t2 - t1,
        "crds": t3 - t2,
        "total": t3 - t0,
        "restart": t5 - t4,
    }


def main() -> None:
    """Run the rounds and report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5, help="cold starts to time")
    parser.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    args = parser.parse_args()
    binaries = build_binaries()
    rounds = []
    for index in range(args.rounds):
        rounds.append(one_round(binaries))
        print(f"  round {index + 1}: " + ", ".join(f"{k} {v:.2f}s" for k, v in rounds[-1].items()))
    labels = {
        "ready": "start() to `/readyz` 200 (PKI, etcd, kube-apiserver)",
        "namespace": "create namespace `gridweave`",
        "crds": "install both CRDs, Established and in `/openapi/v3`",
        "total": "ready with namespace and CRDs",
        "restart": "restart on the same directory (data and PKI kept) to `/readyz`",
    }
    lines = ["| step | median s | min s | max s |", "| --- | ---: | ---: | ---: |"]
    for key, label in labels.items():
        values = [r[key] for r in rounds]
        lines.append(
            f"| {label} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |"
        )
    section = "\n".join(
        [
            "## Local Kubernetes API start (`bench/bench_kubeapi.py`)",
            "",
            f"{machine_line()}. `gridweave_runtime.kubeapi.KubeAPIServer` (etcd 3.6.16 + "
            f"kube-apiserver v1.36.3) on a fresh temporary directory, etcd without fsync as "
            f"in the tests; {args.rounds} rounds.",
            "",
            *lines,
        ]
    )
    print(section)
    if not args.no_doc:
        write_section("kubeapi", section)


if __name__ == "__main__":
    main()
