"""``/v1/refills``: top a low account up, at most once per refill period."""

from __future__ import annotations

from fastapi import Response

from faucet_service.routers.common import (
    ClientAddressDep,
    CreditDep,
    SessionDep,
    SettingsDep,
    internal_router,
)
from faucet_service.services import refills
from gridweave_clients.faucet.models import RefillRequest, RefillResponse

__all__ = ["router"]

router = internal_router("/v1/refills", "refills")


@router.post("", status_code=201)
def request_refill(
    body: RefillRequest,
    session: SessionDep,
    settings: SettingsDep,
    credit: CreditDep,
    address: ClientAddressDep,
    response: Response,
) -> RefillResponse:
    """Mint a refill if the balance is below the threshold and the last one is old enough."""
    result, completed_earlier = refills.request_refill(
        session, user_id=body.user_id, client_address=address, settings=settings, credit=credit
    )
    if completed_earlier:
        response.status_code = 200
    return result
