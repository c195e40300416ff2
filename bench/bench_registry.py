"""The image registry: push and pull throughput of a 200 MB image, token auth vs auth off.

Two real registries (``tools/registry``) side by side in the same run: one with token auth
from the platform (every client request carries a JWT the registry verifies; crane gets its
tokens from ``/v1/registry/token`` with an API key), one with auth off. For each, crane
(``tools/registry-clients``) pushes a new single-layer image of 200 MB random bytes to a new
repository, then pulls it to a tarball three times (the median kept); the trials alternate
between the two registries. Throughput is the image's bytes over the command's wall time
(crane's own work, hashing and gzip, included, as a user sees it). Goal: auth on >= 0.95x
auth off.

Run from the repository root: ``.venv/bin/python -m bench.bench_registry [--trials N]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from tests.platform_service.factories import platform_settings, running_platform
from tests.registry_service.factories import (
    Crane,
    image_layer,
    registry_settings,
    running_registry,
)
from tests.support.postgres import start_test_postgres

IMAGE_BYTES = 200 * 10**6
#: A pull of 200 MB takes about half a second here: each trial takes the median of a few.
PULLS = 3


def timed(crane: Crane, *args: str) -> float:
    """Seconds ``crane ARGS`` took."""
    started = time.perf_counter()
    crane.run(*args)
    return time.perf_counter() - started


def trial(crane: Crane, namespace: str, index: int, layer: Path, work: Path) -> tuple[float, float]:
    """(push MB/s, pull MB/s) of a new 200 MB image: one push, the median of PULLS pulls."""
    layer.write_bytes(image_layer(IMAGE_BYTES))
    ref = crane.ref(f"{namespace}/bench{index}")
    push = timed(crane, "append", "-f", str(layer), "-t", ref)
    pulled = work / "pulled.tar"
    pulls = []
    for _ in range(PULLS):
        pulls.append(timed(crane, "pull", ref, str(pulled)))
        pulled.unlink()
    return IMAGE_BYTES / 10**6 / push, IMAGE_BYTES / 10**6 / statistics.median(pulls)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_registry")
    parser.add_argument("--trials", type=int, default=5)
    trials = parser.parse_args().trials
    with start_test_postgres() as postgres, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        url = postgres.create_database("benchregistry")
        with (
            running_platform(platform_settings(url, work / "platform")) as platform,
            running_registry(registry_settings(platform.url, work / "auth")) as with_auth,
            running_registry(
                registry_settings(platform.url, work / "open", auth=False)
            ) as without_auth,
        ):
            user = platform.new_user()
            cranes = {
                "token auth": Crane(f"localhost:{with_auth.settings.port}", work / "crane-auth"),
                "auth off": Crane(f"localhost:{without_auth.settings.port}", work / "crane-open"),
            }
            cranes["token auth"].login(user.key)
            results: dict[str, list[tuple[float, float]]] = {name: [] for name in cranes}
            for index in range(trials):
                order = list(cranes) if index % 2 == 0 else list(reversed(cranes))
                for name in order:
                    layer = work / "layer.tar"
                    results[name].append(trial(cranes[name], user.user_id, index, layer, work))
                    print(
                        f"trial {index + 1} {name}: push {results[name][-1][0]:.1f} MB/s, "
                        f"pull {results[name][-1][1]:.1f} MB/s",
                        flush=True,
                    )
        postgres.drop_database(url)
    medians = {
        name: (
            statistics.median(push for push, _ in runs),
            statistics.median(pull for _, pull in runs),
        )
        for name, runs in results.items()
    }
    for name, (push, pull) in medians.items():
        print(f"{name}: median push {push:.1f} MB/s, pull {pull:.1f} MB/s")
    auth_push, auth_pull = medians["token auth"]
    open_push, open_pull = medians["auth off"]
    print(f"auth / off: push {auth_push / open_push:.3f}x, pull {auth_pull / open_pull:.3f}x")


if __name__ == "__main__":
    main()
