"""A job's own image on its node: the first job in a new image (pull, unpack, start) and the
next one from the node's cache, beside the same job in the node's default image.

The real registry (the platform's tokens, on PostgreSQL) holds the default image, published
as ``gridweave up`` publishes it, and a user's image built on it with one more layer of
``--layer-mb`` MB of random bytes (incompressible, so about that much crosses the wire);
the node pulls it with the owner's token (skopeo), unpacks it (umoci) and runs a trivial
function in a container of it (runc), as a worker does. ``--rounds`` new images are timed
cold (each its own digest, so none is in the cache yet), then each one warm.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import cloudpickle

from bench.report import machine_line, write_section
from job_gateway.sandbox.attempt import warm_containers
from job_gateway.sandbox.images import ImagePull, unpacked_image
from tests.platform_service.factories import User, platform_settings, running_platform
from tests.support.http_server import free_port
from tests.support.job_images import JobImages, registry_beside
from tests.support.postgres import start_test_postgres
from tests.support.sandbox import run_function, sandbox_config


def add_one(x: int) -> int:
    return x + 1


def _timed_job(images: JobImages, owner: User, image: str | None, cache: Path) -> float:
    """Seconds from the attempt's start to the value: the pull and unpack (when the image
    is not cached), a new container, one call."""
    config = sandbox_config(image_dir=cache)
    warm_containers.close()  # a new container each time: the first job of its owner
    clock = time.perf_counter()
    unpacked = None
    if image is not None:
        token = images.pull_token(owner.user_id, image.partition("@")[0])
        pull = ImagePull(image=image, registry=images.address, token=token)
        unpacked = unpacked_image(cache, pull)
    assert run_function(config, add_one, 1, image=unpacked).value == 2
    return time.perf_counter() - clock


def measure(rounds: int, layer_mb: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"default": [], "cold": [], "warm": []}
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="gw-bench-images-"))
    work.chmod(0o755)
    try:
        with start_test_postgres() as postgres, postgres.database("gwbenchimages") as url:
            settings = platform_settings(
                url, work / "platform", registry_url=f"http://127.0.0.1:{free_port()}"
            )
            with (
                running_platform(settings) as platform,
                registry_beside(platform, settings, work) as images,
            ):
                owner = platform.new_user()
                pushed = []
                for round_ in range(rounds):
                    repository = f"{owner.user_id}/big"
                    layer = {"opt/data.bin": os.urandom(layer_mb * 1_000_000)}
                    digest = images.push_image(owner, repository, layer, tag=f"r{round_}")
                    pushed.append(f"{repository}@{digest}")
                cache = work / "images"  # each image is new to it (a digest of its own)
                for image in pushed:
                    timings["default"].append(_timed_job(images, owner, None, cache))
                    timings["cold"].append(_timed_job(images, owner, image, cache))
                for image in pushed:
                    timings["warm"].append(_timed_job(images, owner, image, cache))
    finally:
        warm_containers.close()
        shutil.rmtree(work, ignore_errors=True)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layer-mb", type=int, default=150)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    timings = measure(args.rounds, args.layer_mb)

    def p50(name: str) -> str:
        return f"{statistics.median(timings[name]):.2f} s"

    lines = [
        "## A job's own image: first job, then from the cache (`bench/bench_images.py`)",
        "",
        f"{machine_line()}; shared with other work. The user's image: the default image "
        f"(Debian's Python 3.11 and pip, 205 MB unpacked) plus {args.layer_mb} MB of random "
        f"bytes; {args.rounds} new images, p50 of each.",
        "",
        "| the job's first attempt | time to its value |",
        "| --- | --- |",
        f"| in the node's default image (a new container) | {p50('default')} |",
        f"| in a new image: pull, unpack, a new container | {p50('cold')} |",
        f"| in that image again, from the node's cache | {p50('warm')} |",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("Job images (`bench_images`)", text)


if __name__ == "__main__":
    main()
