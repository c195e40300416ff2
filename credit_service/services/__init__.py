"""Business rules of credit_service; routers call these, these never raise HTTP errors."""
