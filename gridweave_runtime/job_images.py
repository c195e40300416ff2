"""Where a node keeps its job images: the default image's build and the images jobs named.

``tools/sandbox-image/build.sh`` (``make sandbox``) builds Gridweave's default job image
into ``<cache>/base``: its root filesystem (``rootfs``, what a job container runs in unless
its owner chose an image) and the same files as an OCI layout (``oci``, tag
:data:`DEFAULT_IMAGE_TAG`), which ``gridweave up`` and ``deploy.sh`` push to the registry as
:data:`DEFAULT_IMAGE`. The cache is ``GRIDWEAVE_SANDBOX_CACHE``, else
``/var/cache/gridweave/sandbox``: outside any home directory, since every job's uid must
pass through the directories above its image (a home is 0700).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_IMAGE_REPOSITORY",
    "DEFAULT_IMAGE_TAG",
    "SYSTEM_CACHE",
    "default_image_layout",
    "default_rootfs",
    "image_cache",
    "pip_cache",
    "sandbox_cache",
]

SYSTEM_CACHE = Path("/var/cache/gridweave/sandbox")
#: Gridweave's default job image in the registry's public namespace (Debian's Python 3.11).
DEFAULT_IMAGE_REPOSITORY = "gridweave/python"
DEFAULT_IMAGE = f"{DEFAULT_IMAGE_REPOSITORY}:3.11"
#: The default image's tag in its OCI layout.
DEFAULT_IMAGE_TAG = "python-3.11"


def sandbox_cache() -> Path:
    """``GRIDWEAVE_SANDBOX_CACHE``, else the system's cache directory."""
    return Path(os.environ.get("GRIDWEAVE_SANDBOX_CACHE") or SYSTEM_CACHE)


def default_rootfs() -> Path:
    """The default image's root filesystem."""
    return sandbox_cache() / "base" / "rootfs"


def default_image_layout() -> Path:
    """The default image as an OCI layout (tag :data:`DEFAULT_IMAGE_TAG`)."""
    return sandbox_cache() / "base" / "oci"


def image_cache() -> Path:
    """Where a node keeps the images its jobs named, unpacked, one directory per digest."""
    return sandbox_cache() / "images"


def pip_cache() -> Path:
    """Where a node keeps its jobs' pip environments, one directory per image and list."""
    return sandbox_cache() / "pip"
