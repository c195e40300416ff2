"""Endpoint billing in the gateway: each run's billing periods held, recorded and released
at metering (``billing``), read from the gateway's own endpoint informer (``informed``)."""

from __future__ import annotations

from job_gateway.endpoint_billing.billing import EndpointBilling
from job_gateway.endpoint_billing.informed import InformedBilling

__all__ = ["EndpointBilling", "InformedBilling"]
