"""HTTP routes of faucet_service; every one requires a service credential.

The faucet is never reached from outside: platform_service, the one public API, calls it
with its service token and passes the end user's address in ``X-Gridweave-Client-Address``.
"""
