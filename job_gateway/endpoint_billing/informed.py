"""The gateway's endpoint billing: fed by its endpoint informer (no listing over HTTP),
stopping an endpoint its owner cannot pay for with the gateway's own stop."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from gridweave_clients.errors import ServiceError
from gridweave_clients.gateway.endpoints import EndpointResponse, StopEndpointRequest
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering.price_source import MeteringPrices
from gridweave_controller.models import Endpoint
from gridweave_controller.operations import AsyncClientBase
from job_gateway.endpoint_billing.billing import EndpointBilling
from job_gateway.errors import BillingUnavailable
from job_gateway.services.endpoints import endpoint_response, stop_endpoint
from job_gateway.settings import GatewaySettings

__all__ = ["InformedBilling"]

_log = logging.getLogger(__name__)
#: The longest stop message the endpoint's status keeps.
_MESSAGE_CHARS = 1024


class InformedBilling:
    """:class:`EndpointBilling` on the gateway's informer cache and CRD client."""

    def __init__(
        self,
        crd: AsyncClientBase,
        metering: AsyncMeteringClient,
        settings: GatewaySettings,
        *,
        informed: Callable[[], Iterable[Endpoint]],
    ) -> None:
        """``informed``: the endpoints the informer holds now."""
        self._crd = crd
        self._informed = informed
        self._interval = settings.endpoint_billing_interval_seconds
        self.billing = EndpointBilling(
            metering,
            prices=MeteringPrices(metering),  # the table metering bills by, read from it
            stop=self._stop,
            period_seconds=settings.endpoint_billing_seconds,
        )

    def endpoint_changed(self, endpoint: Endpoint) -> None:
        """An informer's add or update: one more observation of the run."""
        self.billing.observe(endpoint_response(endpoint))

    async def run(self) -> None:
        """A billing pass on start and every interval, until cancelled."""
        await self.billing.run(self._listed, interval_seconds=self._interval)

    async def settle_replaced(self, endpoint: Endpoint) -> None:
        """Settle every run of an ended endpoint a deploy of its name is about to replace;
        503 (``billing_unavailable``) when metering cannot be reached: nothing is replaced."""
        try:
            await self.billing.settle_replaced(endpoint_response(endpoint))
        except ServiceError as exc:
            _log.warning("endpoint %s: its last run not settled: %s", endpoint.name, exc)
            raise BillingUnavailable(detail=str(exc)) from exc

    async def settle_before_placing(self, endpoint: Endpoint) -> bool:
        """Settle the last run of an endpoint about to be placed again; False (it waits for
        a later pass) when metering cannot be reached."""
        try:
            await self.settle_replaced(endpoint)
        except BillingUnavailable:
            return False
        return True

    async def _listed(self) -> list[EndpointResponse]:
        return [endpoint_response(endpoint) for endpoint in self._informed()]

    async def _stop(self, endpoint_id: str, reason: str, message: str) -> None:
        request = StopEndpointRequest(reason=reason, message=message[:_MESSAGE_CHARS])
        await stop_endpoint(crd=self._crd, endpoint_id=endpoint_id, request=request)
