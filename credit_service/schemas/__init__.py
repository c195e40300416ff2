"""Request and response bodies of credit_service (one module per resource)."""
