"""Business rules of chain_service; routers call these, these never raise HTTP errors."""
