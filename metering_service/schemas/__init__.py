"""Request and response bodies of metering_service (one module per resource)."""
