"""HTTP routes of chain_service; every one requires a service credential."""
