"""HTTP routes of metering_service; every one requires a service credential."""
