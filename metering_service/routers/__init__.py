"""HTTP routes of metering_service; every one requires the internal token."""
