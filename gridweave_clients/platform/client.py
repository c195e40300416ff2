"""The blocking and asyncio clients of platform_service: the public API, with an API key."""

from __future__ import annotations

from typing import Any

from gridweave_clients.base import AsyncInternalClient, InternalClient, awaiting, blocking
from gridweave_clients.platform import admin as admin_ops
from gridweave_clients.platform import endpoints as endpoint_ops
from gridweave_clients.platform import maps as map_ops
from gridweave_clients.platform import operations as ops
from gridweave_clients.platform import spending_limits as spending_ops
from gridweave_clients.platform import user_limits as limit_ops

__all__ = ["AsyncPlatformClient", "PlatformClient"]

# The client base sends its token as ``Authorization: Bearer``, the header the platform reads
# an API key from. Without a key (sign-up) the header is left out.
_NO_KEY = "-"


class _Anonymous:
    """Drops the ``Authorization`` header when the client was made without an API key."""

    _headers: dict[str, str]
    _body_headers: dict[str, str]

    def _forget_key(self) -> None:
        self._headers.pop("Authorization", None)
        self._body_headers.pop("Authorization", None)


class PlatformClient(InternalClient, _Anonymous):
    """platform_service (port 8100) with a user's API key (``None``: the public routes only)."""

    service = "platform_service"

    def __init__(self, base_url: str, api_key: str | None = None, **options: Any) -> None:
        super().__init__(base_url, api_key or _NO_KEY, **options)
        if api_key is None:
            self._forget_key()

    get_me = blocking(ops.get_me)
    create_user = blocking(ops.create_user)
    list_keys = blocking(ops.list_keys)
    create_key = blocking(ops.create_key)
    revoke_key = blocking(ops.revoke_key)
    sign_up = blocking(ops.sign_up)
    verify_sign_up = blocking(ops.verify_sign_up)
    submit_job = blocking(ops.submit_job)
    get_job = blocking(ops.get_job)
    list_jobs = blocking(ops.list_jobs)
    cancel_job = blocking(ops.cancel_job)
    submit_map = blocking(map_ops.submit_map)
    get_map = blocking(map_ops.get_map)
    list_maps = blocking(map_ops.list_maps)
    cancel_map = blocking(map_ops.cancel_map)
    get_map_chunk = blocking(map_ops.get_map_chunk)
    get_map_records = blocking(map_ops.get_map_records)
    get_job_result = blocking(ops.get_job_result)
    get_job_logs = blocking(ops.get_job_logs)
    deploy_endpoint = blocking(endpoint_ops.deploy_endpoint)
    list_endpoints = blocking(endpoint_ops.list_endpoints)
    get_endpoint = blocking(endpoint_ops.get_endpoint)
    stop_endpoint = blocking(endpoint_ops.stop_endpoint)
    get_endpoint_logs = blocking(endpoint_ops.get_endpoint_logs)
    get_receipt = blocking(ops.get_receipt)
    get_credits = blocking(ops.get_credits)
    get_prices = blocking(ops.get_prices)
    request_refill = blocking(ops.request_refill)
    list_usage = blocking(ops.list_usage)
    list_nodes = blocking(ops.list_nodes)
    get_registry_usage = blocking(ops.get_registry_usage)
    get_registry_quota = blocking(ops.get_registry_quota)
    set_registry_quota = blocking(ops.set_registry_quota)
    list_registry_shares = blocking(ops.list_registry_shares)
    share_repository = blocking(ops.share_repository)
    unshare_repository = blocking(ops.unshare_repository)
    issue_pull_token = blocking(ops.issue_pull_token)
    list_join_keys = blocking(admin_ops.list_join_keys)
    create_join_key = blocking(admin_ops.create_join_key)
    revoke_join_key = blocking(admin_ops.revoke_join_key)
    list_joined_nodes = blocking(admin_ops.list_joined_nodes)
    cordon_node = blocking(admin_ops.cordon_node)
    uncordon_node = blocking(admin_ops.uncordon_node)
    drain_node = blocking(admin_ops.drain_node)
    list_users = blocking(admin_ops.list_users)
    grant_credits = blocking(admin_ops.grant_credits)
    get_user_limits = blocking(limit_ops.get_user_limits)
    set_user_limits = blocking(limit_ops.set_user_limits)
    get_spending_limits = blocking(spending_ops.get_spending_limits)
    set_spending_limits = blocking(spending_ops.set_spending_limits)
    get_user_spending_limits = blocking(spending_ops.get_user_spending_limits)
    set_user_spending_limits = blocking(spending_ops.set_user_spending_limits)


class AsyncPlatformClient(AsyncInternalClient, _Anonymous):
    """platform_service over asyncio: the methods of :class:`PlatformClient`, awaited."""

    service = "platform_service"

    def __init__(self, base_url: str, api_key: str | None = None, **options: Any) -> None:
        super().__init__(base_url, api_key or _NO_KEY, **options)
        if api_key is None:
            self._forget_key()

    get_me = awaiting(ops.get_me)
    create_user = awaiting(ops.create_user)
    list_keys = awaiting(ops.list_keys)
    create_key = awaiting(ops.create_key)
    revoke_key = awaiting(ops.revoke_key)
    sign_up = awaiting(ops.sign_up)
    verify_sign_up = awaiting(ops.verify_sign_up)
    submit_job = awaiting(ops.submit_job)
    get_job = awaiting(ops.get_job)
    list_jobs = awaiting(ops.list_jobs)
    cancel_job = awaiting(ops.cancel_job)
    submit_map = awaiting(map_ops.submit_map)
    get_map = awaiting(map_ops.get_map)
    list_maps = awaiting(map_ops.list_maps)
    cancel_map = awaiting(map_ops.cancel_map)
    get_map_chunk = awaiting(map_ops.get_map_chunk)
    get_map_records = awaiting(map_ops.get_map_records)
    get_job_result = awaiting(ops.get_job_result)
    get_job_logs = awaiting(ops.get_job_logs)
    deploy_endpoint = awaiting(endpoint_ops.deploy_endpoint)
    list_endpoints = awaiting(endpoint_ops.list_endpoints)
    get_endpoint = awaiting(endpoint_ops.get_endpoint)
    stop_endpoint = awaiting(endpoint_ops.stop_endpoint)
    get_endpoint_logs = awaiting(endpoint_ops.get_endpoint_logs)
    get_receipt = awaiting(ops.get_receipt)
    get_credits = awaiting(ops.get_credits)
    get_prices = awaiting(ops.get_prices)
    request_refill = awaiting(ops.request_refill)
    list_usage = awaiting(ops.list_usage)
    list_nodes = awaiting(ops.list_nodes)
    get_registry_usage = awaiting(ops.get_registry_usage)
    get_registry_quota = awaiting(ops.get_registry_quota)
    set_registry_quota = awaiting(ops.set_registry_quota)
    list_registry_shares = awaiting(ops.list_registry_shares)
    share_repository = awaiting(ops.share_repository)
    unshare_repository = awaiting(ops.unshare_repository)
    issue_pull_token = awaiting(ops.issue_pull_token)
    list_join_keys = awaiting(admin_ops.list_join_keys)
    create_join_key = awaiting(admin_ops.create_join_key)
    revoke_join_key = awaiting(admin_ops.revoke_join_key)
    list_joined_nodes = awaiting(admin_ops.list_joined_nodes)
    cordon_node = awaiting(admin_ops.cordon_node)
    uncordon_node = awaiting(admin_ops.uncordon_node)
    drain_node = awaiting(admin_ops.drain_node)
    list_users = awaiting(admin_ops.list_users)
    grant_credits = awaiting(admin_ops.grant_credits)
    get_user_limits = awaiting(limit_ops.get_user_limits)
    set_user_limits = awaiting(limit_ops.set_user_limits)
    get_spending_limits = awaiting(spending_ops.get_spending_limits)
    set_spending_limits = awaiting(spending_ops.set_spending_limits)
    get_user_spending_limits = awaiting(spending_ops.get_user_spending_limits)
    set_user_spending_limits = awaiting(spending_ops.set_user_spending_limits)
