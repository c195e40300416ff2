"""Image references: as a user names an image, and as a job carries it.

A user names an image of the platform's registry without its host, as the registry's
tokens name repositories: ``<namespace>/<name>[:<tag>]`` or ``<namespace>/<name>@sha256:<hex>``
(``gridweave/python:3.11`` is the public default image, ``<user id>/tools:v2`` one of the
user's own). A job runs only images of its platform's registry, so a reference that names
a host (``docker.io/...``, ``localhost:30500/...``) is refused with what to write instead.

The platform resolves a tag to its manifest's digest when the job is submitted; from then
on the job carries the pinned form ``<repository>@sha256:<hex>`` (:data:`PinnedImage`), so
every attempt, on every node, runs the same image.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, Field

from gridweave_controller.validation import (
    MAX_IMAGE_LENGTH,
    PINNED_IMAGE_PATTERN,
    REPOSITORY_NAME,
)

__all__ = [
    "DEFAULT_IMAGE",
    "IMAGE_PATTERN",
    "ImageName",
    "ImageReference",
    "PinnedImage",
    "parse_image",
]

#: Gridweave's own image of the cluster's Python, in the registry's public namespace.
DEFAULT_IMAGE = "gridweave/python:3.11"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"sha256:[0-9a-f]{64}"
#: What a user may write: a repository, then a tag or a digest (or neither: ``latest``).
IMAGE_PATTERN = rf"^{REPOSITORY_NAME}(?::{_TAG})?(?:@{_DIGEST})?$"
_IMAGE = re.compile(IMAGE_PATTERN)


def _named_image(text: str) -> str:
    parse_image(text)  # its ValueError says what is wrong and what to write
    return text


#: An image as a request names it; a bad one is refused saying what to write instead.
ImageName = Annotated[
    str,
    AfterValidator(_named_image),
    Field(
        min_length=3,
        max_length=MAX_IMAGE_LENGTH,
        description=(
            "An image of the platform's registry, without its host: <namespace>/<name>[:tag] "
            "or <namespace>/<name>@sha256:<digest> (default: the node's own image)."
        ),
    ),
]
PinnedImage = Annotated[
    str,
    Field(
        max_length=MAX_IMAGE_LENGTH,
        pattern=PINNED_IMAGE_PATTERN,
        description="The image pinned to its manifest's digest: <repository>@sha256:<hex>.",
    ),
]


@dataclass(frozen=True, slots=True)
class ImageReference:
    """A parsed reference: the repository and the tag or digest it names."""

    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def reference(self) -> str:
        """What the registry's manifest route takes: the digest, else the tag (``latest``)."""
        return self.digest or self.tag or "latest"

    def pinned(self, digest: str) -> str:
        """``<repository>@<digest>``: what a job carries."""
        return f"{self.repository}@{digest}"

    def __str__(self) -> str:
        if self.digest is not None:
            return f"{self.repository}@{self.digest}"
        return f"{self.repository}:{self.tag or 'latest'}"


def parse_image(text: str) -> ImageReference:
    """The reference ``text`` names; ``ValueError`` saying what is wrong and what to write."""
    if not isinstance(text, str) or not text:
        raise ValueError("the image must be a non-empty string, e.g. gridweave/python:3.11")
    if len(text) > MAX_IMAGE_LENGTH:
        raise ValueError(f"the image name is longer than {MAX_IMAGE_LENGTH} characters")
    first = text.split("/", 1)[0]
    if "/" in text and ("." in first or ":" in first or first == "localhost"):
        raise ValueError(
            f"{text!r} names a registry host ({first}): jobs run images of the platform's "
            f"own registry, named without the host, e.g. {text.split('/', 1)[1]}"
        )
    if not _IMAGE.fullmatch(text):
        raise ValueError(
            f"{text!r} is not an image of the platform's registry: write "
            "<namespace>/<name>[:tag] or <namespace>/<name>@sha256:<digest> in lower case, "
            "e.g. gridweave/python:3.11"
        )
    rest, _, digest = text.partition("@")
    repository, _, tag = rest.rpartition(":") if ":" in rest else (rest, "", "")
    return ImageReference(repository=repository, tag=tag or None, digest=digest or None)
