"""HTTP routes of credit_service; every one requires a service credential."""
