"""HTTP routes of chain_service; every one requires the internal token."""
