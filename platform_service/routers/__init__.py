"""HTTP routes of platform_service, the one public API.

Every route needs an API key (``Authorization: Bearer gw_live_...``) except the public
ones (``platform_service.auth.PUBLIC_PATHS``): health, metrics, the API's documentation
and sign-up.
"""
