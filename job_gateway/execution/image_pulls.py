"""The pull of a job's image, with its owner's rights: a token from the platform per attempt.

A job's ``spec.image`` is pinned to a digest when it is submitted; the node pulls it with a
registry token the platform signs for the job's owner (``POST /v1/registry/pull-tokens``,
a service token), by the same rules as the owner's own pulls. A share withdrawn since
the submission therefore stops the job (reason ``ImageRefused``) instead of letting the
node pull on. Tokens are kept per owner and repository until shortly before they expire,
so a warm call asks the platform nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gridweave_clients.errors import ServiceRefused
from gridweave_clients.platform import AsyncPlatformClient
from job_gateway.sandbox.images import ImagePull

__all__ = ["ImageRefusedToOwner", "PullTokens"]

#: A token is asked again this long before it expires (a pull must not start on one about
#: to lapse).
_MARGIN_SECONDS = 60.0


class ImageRefusedToOwner(Exception):
    """The platform refused the owner a pull of the job's image; the message says why."""


class PullTokens:
    """The owners' pull tokens, asked of the platform and kept until near their expiry."""

    def __init__(
        self,
        platform: AsyncPlatformClient,
        *,
        registry: str,
        plain_http: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._platform = platform
        self._registry = registry
        self._plain_http = plain_http
        self._clock = clock
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}

    async def pull_for(self, user_id: str, image: str) -> ImagePull:
        """How the node pulls ``image`` (pinned) as ``user_id``.

        Raises:
            ImageRefusedToOwner: the owner may not pull it (any longer).
            gridweave_clients.ServiceError: the platform did not answer (try again).
        """
        repository = image.partition("@")[0]
        key = (user_id, repository)
        now = self._clock()
        kept = self._tokens.get(key)
        if kept is None or kept[1] <= now:
            try:
                answer = await self._platform.issue_pull_token(user_id, repository)
            except ServiceRefused as refused:
                raise ImageRefusedToOwner(refused.message) from refused
            kept = (answer.token, now + max(0.0, answer.expires_in - _MARGIN_SECONDS))
            self._tokens[key] = kept
        return ImagePull(
            image=image, registry=self._registry, token=kept[0], plain_http=self._plain_http
        )

    async def close(self) -> None:
        """Close the platform client."""
        await self._platform.aclose()
