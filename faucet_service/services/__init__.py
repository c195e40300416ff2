"""Business rules of faucet_service; routers call these, these never raise HTTP errors."""
