"""``python -m gridweave_runtime.kubeapi``: run the local Kubernetes API until interrupted.

Starts etcd and kube-apiserver under the state directory (default
``~/.gridweave/kubeapi``), creates the namespace ``gridweave``, installs the CRD manifests
given (by default ``k8s/*-crd.yaml`` of a source checkout), prints the ``KUBECONFIG`` line
and waits; SIGINT or SIGTERM stops both processes.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from gridweave_runtime.kubeapi.errors import KubeAPIError
from gridweave_runtime.kubeapi.launcher import KubeAPIServer, find_binaries
from gridweave_runtime.settings import default_state_dir

_SOURCE_MANIFESTS = Path(__file__).resolve().parents[2] / "k8s"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gridweave_runtime.kubeapi", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=default_state_dir() / "kubeapi",
        help="data, certificates, logs and admin.kubeconfig (default: %(default)s)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (%(default)s)")
    parser.add_argument("--port", type=int, default=6443, help="apiserver port (%(default)s)")
    parser.add_argument(
        "--crd",
        type=Path,
        action="append",
        dest="crds",
        help="a CRD manifest to install (repeatable; default: k8s/*-crd.yaml of this checkout)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run until SIGINT or SIGTERM; 0 on a clean stop, 1 if the API could not start."""
    args = _parser().parse_args(argv)
    crds = args.crds if args.crds is not None else sorted(_SOURCE_MANIFESTS.glob("*-crd.yaml"))
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        server = KubeAPIServer(
            args.state_dir,
            binaries=find_binaries(),
            host=args.host,
            port=args.port,
            crd_manifests=crds,
        )
        server.start()
    except KubeAPIError as exc:
        print(f"the Kubernetes API could not start: {exc}", file=sys.stderr)
        return 1
    try:
        print(f"Kubernetes API ready at {server.url}", flush=True)
        print(f"export KUBECONFIG={server.kubeconfig}", flush=True)
        print(f"kubectl: {server.binaries / 'kubectl'}", flush=True)
        stop.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
