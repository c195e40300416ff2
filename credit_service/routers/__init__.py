"""HTTP routes of credit_service; every one requires the internal token."""
