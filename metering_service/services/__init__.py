"""Business rules of metering_service; routers call these, these never raise HTTP errors."""
