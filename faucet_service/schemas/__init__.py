"""Request and response bodies of faucet_service (one module per resource)."""
