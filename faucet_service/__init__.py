"""faucet_service: email verification, onboarding credits and refills."""

from __future__ import annotations

from faucet_service.app import create_app
from faucet_service.settings import FaucetSettings

__all__ = ["FaucetSettings", "create_app"]
