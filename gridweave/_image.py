"""``gw.Image``: an image of the platform's registry and the packages pip installs for it.

``image=gw.Image("alice/tools:v2").pip_install("numpy==2.1.3")`` is the same as
``image="alice/tools:v2", pip=["numpy==2.1.3"]``, built the same way: on each node, once
per image and list of requirements. ``gw.Image()`` is the node's default image.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gridweave._units import parse_image_argument, parse_pip

__all__ = ["Image", "image_and_pip"]


@dataclass(frozen=True)
class Image:
    """An image (``name`` of the platform's registry, without its host; None: the node's
    default image) and the pip requirements installed for it, in order."""

    name: str | None = None
    packages: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.name is not None:
            parse_image_argument(self.name)
        parse_pip(self.packages)

    def pip_install(self, *requirements: str) -> Image:
        """This image with ``requirements`` installed too, after its own ("numpy==2.1.3"; no
        pip option, URL or path); a new ``Image``, this one unchanged.

        Raises:
            ConfigurationError: a requirement pip= would refuse, or too many in all.
        """
        return Image(self.name, self.packages + parse_pip(requirements))


def image_and_pip(
    image: str | Image | None, pip: Sequence[str] | None
) -> tuple[str | None, tuple[str, ...]]:
    """``image=`` and ``pip=`` as the platform takes them: the image's name (checked; None:
    the node's default) and every requirement, an ``Image``'s own first.

    Raises:
        ConfigurationError: a bad image name or requirement (the message names which).
    """
    requirements = parse_pip(pip)
    if isinstance(image, Image):
        return image.name, parse_pip(image.packages + requirements)
    return (None if image is None else parse_image_argument(image)), requirements
