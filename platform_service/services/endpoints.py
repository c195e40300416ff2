"""A user's endpoints: deployed (class stored, gateway told), read, listed, stopped.

A user names an endpoint; its id (the GridweaveEndpoint's name) is the name and ten hex
digits of an HMAC of the user and the name, so two users' endpoints of one name are two
endpoints, and a name finds its endpoint without a table. Another user's endpoint is
answered exactly like a missing one (404).

A deployment is refused with 402 (naming the amount needed) when the owner's available
credits do not cover the first holds the billing places: two billing periods at
``max_replicas`` (``endpoint_periods.endpoint_hold_amount``, the one rule of both); the
endpoint's usage is then held and settled period by period by the gateway's endpoint
billing at metering (``job_gateway/endpoint_billing``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from asyncio import gather
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass

from anyio import to_thread

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.credit import operations as credit_ops
from gridweave_clients.errors import NotFound as ServiceNotFound
from gridweave_clients.errors import ServiceError, ServiceRefused
from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.gateway import endpoints as gw
from gridweave_clients.gateway.quotas import UserQuotaModel
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering.endpoint_periods import (
    ENDPOINT_FIRST_HOLDS,
    endpoint_hold_amount,
)
from gridweave_clients.metering.price_source import PriceSource
from gridweave_clients.platform.endpoints import (
    DeployEndpointRequest,
    EndpointListResponse,
    EndpointResponse,
)
from gridweave_controller.phases import endpoint_is_replaceable
from gridweave_runtime.errors import InvalidRequest
from gridweave_runtime.storage import ObjectStore, ObjectStoreError
from platform_service.errors import DownstreamUnavailable, InsufficientCredits, NotFound
from platform_service.models import Role
from platform_service.services import endpoint_figures as figures
from platform_service.services.downstream import as_user, downstream_errors, platform_error
from platform_service.services.holds import price_table, priced
from platform_service.services.images import ImageRegistry, resolve_image
from platform_service.services.keys import AuthenticatedUser
from platform_service.services.spending_limits import deploy_past_a_cap, get_spending_limits

__all__ = [
    "EndpointServices",
    "check_deployment",
    "deploy_endpoint",
    "endpoint_id_for",
    "endpoint_name",
    "endpoint_response",
    "get_own_endpoint",
    "list_endpoints",
    "stop_endpoint",
]

_log = logging.getLogger(__name__)
_ID_DIGITS = 10


@dataclass(frozen=True)
class EndpointServices:
    """What the endpoint routes call; ``billing_seconds`` is one billing period's length."""

    credit: AsyncCreditClient
    gateway: AsyncGatewayClient
    store: ObjectStore
    #: metering's price table, read from metering
    prices: PriceSource
    id_secret: bytes
    billing_seconds: int
    wake_seconds: float
    #: Where a user's model may come from (directories or storage URIs); admins: anywhere.
    model_roots: tuple[str, ...] = ()
    #: Where an endpoint's image is checked and pinned (None: images are refused).
    images: ImageRegistry | None = None
    #: Where its billed seconds are read (None: the gateway's count of finished runs).
    metering: AsyncMeteringClient | None = None
    #: A user's quota, read when a call wakes a scaled-to-zero endpoint (None: no check).
    quota_of: Callable[[str], Awaitable[UserQuotaModel | None]] | None = None


def endpoint_id_for(secret: bytes, *, user_id: str, name: str) -> str:
    """The endpoint id of ``user_id``'s endpoint ``name``: ``{name}-{10 hex}``."""
    digest = hmac.new(secret, f"endpoint\x00{user_id}\x00{name}".encode(), hashlib.sha256)
    return f"{name}-{digest.hexdigest()[:_ID_DIGITS]}"


def endpoint_name(endpoint_id: str) -> str:
    """The user's name of an endpoint id made by :func:`endpoint_id_for`."""
    return endpoint_id[: -(_ID_DIGITS + 1)] or endpoint_id


def endpoint_response(
    services: EndpointServices, endpoint: gw.EndpointResponse, *, billed: int | None = None
) -> EndpointResponse:
    """The user's view of a gateway endpoint (its upstream URL left out); ``billed``: its
    billed seconds as metering counts them (:func:`endpoint_view`), else the gateway's."""
    name = endpoint_name(endpoint.id)
    return EndpointResponse(
        name=name,
        endpoint_id=endpoint.id,
        path=f"/v1/endpoints/{name}",
        mode=endpoint.mode,
        model=endpoint.model,
        image=endpoint.image,
        pip=endpoint.pip,
        phase=endpoint.phase,
        reason=endpoint.reason,
        message=endpoint.message,
        node=endpoint.node,
        gpu_indices=endpoint.gpu_indices,
        ready_replicas=endpoint.ready_replicas,
        health=endpoint.health,
        vram_mb=endpoint.vram_mb,
        gpu_count=endpoint.gpu_count,
        vendor=endpoint.vendor,
        gpu_models=endpoint.gpu_models,
        memory_mb=endpoint.memory_mb,
        cpu_millis=endpoint.cpu_millis,
        min_replicas=endpoint.min_replicas,
        max_replicas=endpoint.max_replicas,
        idle_seconds=endpoint.idle_seconds,
        created_at=endpoint.created_at,
        started_at=endpoint.started_at,
        stopped_at=endpoint.stopped_at,
        billed_seconds=endpoint.billed_seconds if billed is None else billed,
        price_per_second=figures.price_per_second(services.prices.last(), endpoint),
        max_price_per_second=figures.max_price_per_second(services.prices.last(), endpoint),
        waking_reason=endpoint.waking_reason,
        waking_message=endpoint.waking_message,
    )


async def endpoint_view(
    services: EndpointServices, endpoint: gw.EndpointResponse
) -> EndpointResponse:
    """:func:`endpoint_response` with the seconds its usage records bill, its prices from
    metering's table (unknown while metering has never answered)."""
    with suppress(ServiceError):
        await services.prices.table()
    billed = await figures.billed_seconds(services.metering, endpoint)
    return endpoint_response(services, endpoint, billed=billed)


async def _check_credits(
    services: EndpointServices, *, user_id: str, request: DeployEndpointRequest
) -> None:
    """402 unless the user's available credits cover the first holds the billing places, and
    those holds pass no spending cap in force (``spending_limit``, as a job's would be)."""
    prices = await price_table(services.prices)
    with priced():  # the rule metering prices each period hold by
        needed = endpoint_hold_amount(
            prices,
            vendor=request.vendor,
            vram_mb=request.vram_mb,
            gpu_count=request.gpu_count,
            max_replicas=request.max_replicas,
            period_seconds=services.billing_seconds,
            periods=ENDPOINT_FIRST_HOLDS,
        )
    with downstream_errors("credit_service", passed=()):
        try:
            account = await services.credit.run(as_user(credit_ops.get_account(user_id), user_id))
            available = account.available
            figures = {"balance": account.balance, "held": account.held}
        except ServiceNotFound:
            available, figures = 0, {"balance": 0, "held": 0}
    if available < needed:
        raise InsufficientCredits(
            f"not enough credits: this endpoint holds {needed} micro-credits to start "
            f"({ENDPOINT_FIRST_HOLDS} billing periods of {services.billing_seconds} s at "
            f"{max(1, request.max_replicas)} replicas), {available} are available",
            **figures,
            available=available,
            needed=needed,
        )
    limits = await get_spending_limits(services.credit, user_id=user_id)
    past = deploy_past_a_cap(limits, first_holds=needed, period_hold=needed // ENDPOINT_FIRST_HOLDS)
    if past is not None:
        raise past


def _class_key(endpoint_id: str) -> str:
    return f"endpoints/{endpoint_id}/class.pkl"


def check_deployment(request: DeployEndpointRequest) -> None:
    """The rules across fields the schema cannot say; raises InvalidRequest naming one."""
    if request.mode == "custom":
        if not request.function and request.image is None:
            raise InvalidRequest(
                "function", "a custom endpoint needs its pickled class, or an image that serves"
            )
    elif request.image is not None:
        raise InvalidRequest("image", f"a {request.mode} endpoint serves a model, not an image")
    elif request.pip:
        raise InvalidRequest(
            "pip", f"a {request.mode} endpoint serves with the node's own packages: no pip"
        )
    elif request.function is not None:
        raise InvalidRequest("function", f"a {request.mode} endpoint serves a model, not a class")
    elif request.model is None and request.model_ref is None:
        raise InvalidRequest("model", f"a {request.mode} endpoint needs model or model_ref")
    if request.min_replicas > request.max_replicas:
        raise InvalidRequest("min_replicas", "must not be above max_replicas")


def check_model_source(
    request: DeployEndpointRequest, *, roots: Sequence[str], admin: bool
) -> None:
    """A model path or URI (``model_ref``, or ``model`` when it names one) must lie under
    one of ``roots``, unless an admin deploys it: the replica reads with the server's
    storage credentials, so any other path would let a user serve (read) what is not
    theirs. A plain model id (no ``/``, no scheme) is not a path. InvalidRequest naming
    the field otherwise."""
    if admin:
        return
    for field in ("model_ref", "model"):
        value: str | None = getattr(request, field)
        if value is None or (field == "model" and not _names_a_location(value)):
            continue
        if not any(_is_under(value, root) for root in roots):
            allowed = ", ".join(roots) or "none configured"
            raise InvalidRequest(
                field, f"a model must come from under {allowed} (PLATFORM_MODEL_ROOTS)"
            )


def _names_a_location(value: str) -> bool:
    return "/" in value or "\\" in value or value.startswith((".", "~"))


def _is_under(value: str, root: str) -> bool:
    """``value`` is ``root`` or below it, with no ``.``/``..`` segment and no backslash."""
    if "\\" in value or {".", ".."} & set(value.split("/")):
        return False
    root = root.rstrip("/")
    return bool(root) and (value == root or value.startswith(root + "/"))


async def deploy_endpoint(
    services: EndpointServices,
    *,
    user: AuthenticatedUser,
    request: DeployEndpointRequest,
    quota: UserQuotaModel | None = None,
) -> EndpointResponse:
    """Check the request, its image (pinned to its digest: 403, 404) and the credits, store
    the class (custom), create the endpoint at the gateway (carrying the user's ``quota``:
    429 past it)."""
    check_deployment(request)
    check_model_source(request, roots=services.model_roots, admin=user.role == Role.ADMIN)
    image = None
    if request.image is not None:  # before the credits: a refused image costs nothing
        if services.images is None:
            raise InvalidRequest("image", "this platform has no image registry")
        image = await resolve_image(services.images, user=user, image=request.image)
    user_id = user.user_id
    endpoint_id = endpoint_id_for(services.id_secret, user_id=user_id, name=request.name)
    replaced = await _replaced_endpoint(services, user_id=user_id, endpoint_id=endpoint_id)
    await _check_credits(services, user_id=user_id, request=request)
    function_ref = None
    if request.function is not None:
        try:
            function_ref = await to_thread.run_sync(
                services.store.put, _class_key(endpoint_id), request.function
            )
        except ObjectStoreError as exc:
            raise DownstreamUnavailable(
                "object storage is unavailable: try again", service="storage"
            ) from exc
    creation = gw.CreateEndpointRequest(
        endpoint_id=endpoint_id,
        user_id=user_id,
        mode=request.mode,
        model=request.model,
        model_ref=request.model_ref,
        function_ref=function_ref,
        image=image,
        pip=request.pip or None,
        vram_mb=request.vram_mb,
        gpu_count=request.gpu_count,
        vendor=request.vendor,
        gpu_models=request.gpu_models,
        memory_mb=request.memory_mb,
        cpu_millis=request.cpu_millis,
        min_replicas=request.min_replicas,
        max_replicas=request.max_replicas,
        idle_seconds=request.idle_seconds,
        replace_ended=replaced,
        quota=quota,
    )
    try:
        endpoint = await services.gateway.run(as_user(gw.create_endpoint(creation), user_id))
    except ServiceRefused as exc:
        raise platform_error("job_gateway", exc) from exc
    except Exception as exc:
        # the answer may be lost: the endpoint may exist; its name finds it
        with downstream_errors("job_gateway", passed=()):
            try:
                endpoint = await services.gateway.run(
                    as_user(gw.get_endpoint(endpoint_id), user_id)
                )
            except ServiceNotFound:
                raise DownstreamUnavailable(
                    "job_gateway is unavailable: nothing was deployed, try again",
                    service="job_gateway",
                ) from exc
    return endpoint_response(services, endpoint)


async def _replaced_endpoint(services: EndpointServices, *, user_id: str, endpoint_id: str) -> bool:
    """Whether the deploy replaces an ended endpoint of its name (Failed, or Stopped other
    than Idle: see ``endpoint_is_replaceable``); the gateway settles its last run before
    it replaces the object, so its billing ends with it and never mixes with the new
    endpoint's (same id, new runs). Any other endpoint of the name stays, and the gateway
    answers 409."""
    with downstream_errors("job_gateway", passed=()):
        try:
            existing = await services.gateway.run(as_user(gw.get_endpoint(endpoint_id), user_id))
        except ServiceNotFound:
            return False
    return existing.user_id == user_id and endpoint_is_replaceable(existing.phase, existing.reason)


async def get_own_endpoint(
    services: EndpointServices, *, user_id: str, name: str
) -> gw.EndpointResponse:
    """The user's endpoint ``name``; another user's, or none, is 404 alike."""
    endpoint_id = endpoint_id_for(services.id_secret, user_id=user_id, name=name)
    with downstream_errors("job_gateway", passed=()):
        try:
            endpoint = await services.gateway.run(as_user(gw.get_endpoint(endpoint_id), user_id))
        except ServiceNotFound:
            endpoint = None
    if endpoint is None or endpoint.user_id != user_id:
        raise NotFound("no such endpoint", resource="endpoint", id=name)
    return endpoint


async def list_endpoints(services: EndpointServices, *, user_id: str) -> EndpointListResponse:
    """The user's endpoints, oldest first."""
    with downstream_errors("job_gateway", passed=()):
        listed = await services.gateway.run(as_user(gw.list_endpoints(user_id), user_id))
    own = [endpoint for endpoint in listed.endpoints if endpoint.user_id == user_id]
    views = await gather(*(endpoint_view(services, endpoint) for endpoint in own))
    return EndpointListResponse(endpoints=list(views))


async def stop_endpoint(services: EndpointServices, *, user_id: str, name: str) -> EndpointResponse:
    """Stop the user's endpoint (Stopped, GPUs freed; its usage settled by billing)."""
    endpoint = await get_own_endpoint(services, user_id=user_id, name=name)
    with downstream_errors("job_gateway"):
        stopped = await services.gateway.run(as_user(gw.delete_endpoint(endpoint.id), user_id))
    return await endpoint_view(services, stopped)
