"""platform_service errors, each with a code, an HTTP status and a default message.

Tree::

    GridweaveError (gridweave_runtime)
    └── PlatformError
        ├── NotAuthenticated       401  (no API key, a malformed, unknown or revoked one)
        ├── AdminOnly              403
        ├── CsrfRejected           403  (a write with the session cookie but no CSRF token)
        ├── InsufficientCredits    402  (body: balance, held, available, needed)
        ├── SpendingLimitReached   402  (body: cap, limit, spent, asked)
        ├── NotFound               404  (body: resource, id; also another user's job or key)
        ├── AlreadyRegistered      409  (body: field)
        ├── IdempotencyConflict    409  (body: job_id, differing_fields)
        ├── JobNotFinished         409  (body: job_id, phase)
        ├── JobDidNotComplete      409  (body: job_id, phase, reason, message, traceback)
        ├── MapNotFound            404  (body: map_id; also another user's map)
        ├── ChunkNotReady          409  (body: map_id, chunk; its worker has not stored it)
        ├── TooManyLogStreams      429  (body: limit; the user's live log streams are open)
        ├── NodeNotJoined          409  (body: node; listed by the gateway, not in the registry)
        ├── RegistryScopeRefused   403  (body: refused; another user's repository)
        ├── RegistryPushRefused    403  (body: usage_bytes, quota_bytes; over quota)
        ├── RegistryReadOnly       503  (a push while the registry collects garbage)
        ├── ImageRefused           403  (body: field, image; another user's private image)
        ├── ImageNotFound          404  (body: field, image; no such repository, tag or digest)
        ├── EndpointNotServing     402, 409 or 503 (body: endpoint, phase, reason; its code says)
        ├── EndpointUnreachable    502  (body: endpoint; a running endpoint did not answer)
        ├── DownstreamRefused      the refusing service's own 4xx, code and details, passed on
        ├── DownstreamFailed       502  (a service answered what it never should to us)
        ├── DownstreamUnavailable  503  (body: service; nothing is known to be applied)
        └── MetricsUnavailable     503  (body: setting, url; the console's Prometheus)

A request that passes the schema but breaks a rule raises gridweave_runtime's
``InvalidRequest`` (422 ``invalid_request``, the field named), as in every service.
"""

from __future__ import annotations

from typing import Any

from gridweave_runtime.errors import GridweaveError

__all__ = [
    "AdminOnly",
    "AlreadyRegistered",
    "CsrfRejected",
    "DownstreamFailed",
    "DownstreamRefused",
    "DownstreamUnavailable",
    "EndpointNotServing",
    "EndpointUnreachable",
    "IdempotencyConflict",
    "ImageNotFound",
    "ImageRefused",
    "InsufficientCredits",
    "JobDidNotComplete",
    "JobNotFinished",
    "MapNotFound",
    "MetricsUnavailable",
    "ChunkNotReady",
    "NodeNotJoined",
    "NotAuthenticated",
    "NotFound",
    "PlatformError",
    "RegistryPushRefused",
    "RegistryReadOnly",
    "RegistryRefusal",
    "RegistryScopeRefused",
    "SpendingLimitReached",
    "TooManyLogStreams",
]


class PlatformError(GridweaveError):
    """Base of platform_service's errors."""

    code = "platform_error"
    status_code = 400
    message = "the request failed"


class NotAuthenticated(PlatformError):
    """No API key, or one that is malformed, unknown or revoked."""

    code = "unauthorized"
    status_code = 401
    message = "a valid API key is required (Authorization: Bearer gw_live_...)"


class AdminOnly(PlatformError):
    """The route is for admins."""

    code = "forbidden"
    status_code = 403
    message = "this route is for admins"


class CsrfRejected(PlatformError):
    """A write authenticated by the session cookie without its CSRF token."""

    code = "csrf_rejected"
    status_code = 403
    message = "a write with the session cookie needs the session's X-CSRF-Token header"


class InsufficientCredits(PlatformError):
    """The available balance cannot cover the job's hold."""

    code = "insufficient_credits"
    status_code = 402
    message = "not enough credits for this job's hold"


class SpendingLimitReached(PlatformError):
    """The hold would pass a spending cap: ``cap`` (``monthly`` or ``per_job``), its
    ``limit``, what was ``spent`` this month and the hold ``asked``, in micro-credits."""

    code = "spending_limit"
    status_code = 402
    message = "this submission's hold would pass a spending limit"


class NotFound(PlatformError):
    """No such resource of this user (another user's is not found either)."""

    code = "not_found"
    status_code = 404
    message = "not found"


class AlreadyRegistered(PlatformError):
    """The email belongs to a user already."""

    code = "already_registered"
    status_code = 409
    message = "this email belongs to a registered user"


class IdempotencyConflict(PlatformError):
    """The idempotency key was used for a submission that asked for other resources."""

    code = "idempotency_conflict"
    status_code = 409
    message = "this idempotency key was used for another submission"


class JobNotFinished(PlatformError):
    """The job has no result yet."""

    code = "job_not_finished"
    status_code = 409
    message = "the job has not finished yet"


class JobDidNotComplete(PlatformError):
    """The job finished without a result: failed, cancelled or timed out."""

    code = "job_did_not_complete"
    status_code = 409
    message = "the job finished without a result"


class MapNotFound(PlatformError):
    """No such map of this user (another user's is not found either)."""

    code = "map_not_found"
    status_code = 404
    message = "no such map"

    def __init__(self, *, map_id: str) -> None:
        super().__init__(f"no map {map_id} of yours", map_id=map_id)


class ChunkNotReady(PlatformError):
    """The chunk's worker has not stored its record yet."""

    code = "chunk_not_ready"
    status_code = 409
    message = "the chunk is not done yet"

    def __init__(self, *, map_id: str, chunk: int) -> None:
        super().__init__(
            f"chunk {chunk} of map {map_id} is not done yet: ask again once its worker stored it",
            map_id=map_id,
            chunk=chunk,
        )


class TooManyLogStreams(PlatformError):
    """The user holds as many live log streams open as allowed
    (``PLATFORM_MAX_LOG_STREAMS_PER_USER``)."""

    code = "too_many_log_streams"
    status_code = 429
    message = "too many live log streams are open"


class NodeNotJoined(PlatformError):
    """A cordon or drain of a node the gateway's inventory lists but the node registry does
    not: this machine (the local inventory, which has no cordon) or a node of the inventory
    file (cordoned there)."""

    code = "node_not_joined"
    status_code = 409
    message = "this node was not joined with a join key, so it is not cordoned or drained here"

    def __init__(self, node: str) -> None:
        super().__init__(
            f"node {node!r} was not joined with a join key, so it is not cordoned or drained"
            " here: it is the gateway's own machine (GATEWAY_INVENTORY_SOURCE=local, whose GPUs"
            " cannot be cordoned) or a node of its inventory file (GATEWAY_INVENTORY_SOURCE=file:"
            " set 'cordoned: true' on the node in that file)",
            node=node,
        )


class EndpointNotServing(PlatformError):
    """An endpoint that cannot take calls now: out of credits (402), stopped (409), failed or
    still starting (503); the code says which."""

    code = "endpoint_not_serving"
    status_code = 503
    message = "the endpoint is not serving"

    def __init__(self, message: str, *, status_code: int, code: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.status_code = status_code
        self.code = code


class EndpointUnreachable(PlatformError):
    """A running endpoint's server did not answer the proxied call."""

    code = "endpoint_unreachable"
    status_code = 502
    message = "the endpoint did not answer"


class DownstreamRefused(PlatformError):
    """A service refused the request for a reason the user must see: passed on as it was."""

    def __init__(self, *, status_code: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.status_code = status_code
        self.code = code


class DownstreamFailed(PlatformError):
    """A service answered something it never should to the platform (a deployment fault)."""

    code = "downstream_failed"
    status_code = 502
    message = "an internal service refused the platform's call"


class DownstreamUnavailable(PlatformError):
    """A service could not be reached; nothing is known to have been applied."""

    code = "service_unavailable"
    status_code = 503
    message = "an internal service is unavailable: try again"


class MetricsUnavailable(PlatformError):
    """The admin console's Prometheus is not configured or did not answer; the message names
    the setting (``PLATFORM_PROMETHEUS_URL``)."""

    code = "metrics_unavailable"
    status_code = 503
    message = "no Prometheus answered: set PLATFORM_PROMETHEUS_URL"


class RegistryRefusal(PlatformError):
    """A registry token refused; ``registry_code`` is the code Docker's clients print."""

    registry_code = "DENIED"


class RegistryScopeRefused(RegistryRefusal):
    """Nothing asked for may be granted: another user's repository."""

    code = "registry_access_denied"
    status_code = 403
    message = "access to this repository is refused"


class RegistryPushRefused(RegistryRefusal):
    """A push into a namespace whose usage reached its quota."""

    code = "registry_quota_exceeded"
    status_code = 403
    message = "registry quota exceeded"


class RegistryReadOnly(RegistryRefusal):
    """A push while the registry is read-only for a garbage collection."""

    code = "registry_read_only"
    status_code = 503
    registry_code = "UNAVAILABLE"
    message = (
        "the registry is read-only while it collects garbage (pulls still work): "
        "push again in a few minutes"
    )


class ImageRefused(PlatformError):
    """A job's image the user may not pull: another user's, not shared with it."""

    code = "image_refused"
    status_code = 403
    message = "the image is refused"

    def __init__(self, image: str) -> None:
        super().__init__(
            f"image {image} is refused: a job may run images under your own namespace, "
            "those shared with you (gridweave registry share) and the public gridweave/ ones",
            field="image",
            image=image,
        )


class ImageNotFound(PlatformError):
    """A job's image the registry does not have."""

    code = "image_not_found"
    status_code = 404
    message = "no such image"

    def __init__(self, image: str) -> None:
        super().__init__(
            f"image {image} is not in the platform's registry: push it there first "
            "(log in to the registry with your API key as the password, then push)",
            field="image",
            image=image,
        )
