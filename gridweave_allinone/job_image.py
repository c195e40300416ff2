"""The default job image in the all-in-one's registry: ``gridweave/python:3.11``.

``make sandbox`` builds the image a job runs in unless its owner chose another, and keeps it
as an OCI layout beside its root filesystem (:mod:`gridweave_runtime.job_images`). Once the
registry runs, :func:`publish_default_image` pushes it to the registry's public namespace
with skopeo, so a user can pull it and build an image of their own on it (their image needs
the cluster's Python, which this one has). The push token comes from the platform's own
command (``python -m platform_service publish-token``), signed with the platform's key; a
push of what the registry already has moves only the manifest.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping

from gridweave_runtime.job_images import (
    DEFAULT_IMAGE,
    DEFAULT_IMAGE_REPOSITORY,
    DEFAULT_IMAGE_TAG,
    default_image_layout,
)

__all__ = ["publish_default_image", "push_default_image"]

_TIMEOUT_SECONDS = 600


def publish_default_image(
    registry: str, platform_env: Mapping[str, str], report: Callable[[str], None]
) -> bool:
    """Push the default job image to ``registry`` (``host:port``, plain HTTP); False, with a
    line saying why, when it could not (jobs still run: the nodes use their own copy)."""
    layout = default_image_layout()
    if not (layout / "index.json").is_file():
        report(f"the default job image is not built ({layout}: make sandbox): not published")
        return False
    if shutil.which("skopeo") is None:
        report("skopeo is missing (apt-get install skopeo): the default job image not published")
        return False
    try:
        token = _run(
            [
                sys.executable,
                "-m",
                "platform_service",
                "publish-token",
                "--repository",
                DEFAULT_IMAGE_REPOSITORY,
            ],
            env=dict(platform_env),
        ).strip()
        push_default_image(registry, token)
    except RuntimeError as failed:
        report(f"the default job image was not published: {failed}")
        return False
    report(f"published the default job image {DEFAULT_IMAGE}")
    return True


def push_default_image(registry: str, token: str) -> None:
    """Push the default image's layout to ``registry`` (plain HTTP) with a push ``token``;
    ``RuntimeError`` saying why it failed."""
    _run(
        [
            "skopeo",
            "--insecure-policy",  # the layout is the node's own build
            "copy",
            "--quiet",
            "--dest-tls-verify=false",
            "--dest-registry-token",
            token,
            f"oci:{default_image_layout()}:{DEFAULT_IMAGE_TAG}",
            f"docker://{registry}/{DEFAULT_IMAGE}",
        ]
    )


def _run(command: list[str], env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=env,
            timeout=_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RuntimeError(f"{command[0]}: {error}") from None
    if done.returncode != 0:
        raise RuntimeError((done.stderr.strip() or done.stdout.strip())[-500:])
    return done.stdout
