"""The blocking and asyncio clients of kuberay-service's node registry."""

from __future__ import annotations

import re
from typing import Any

from gridweave_clients._core import Answer, Call, ErrorDecoder
from gridweave_clients.base import AsyncInternalClient, InternalClient, awaiting, blocking
from gridweave_clients.errors import refusal_class
from gridweave_clients.nodes import operations as ops
from gridweave_controller.errors import parse_status_body

__all__ = ["AsyncNodeRegistryClient", "NodeRegistryClient", "StatusErrors"]


class StatusErrors(ErrorDecoder):
    """kuberay-service's refusals are Kubernetes ``Status`` bodies: the code is the reason in
    snake case (``JoinKeyRevoked`` -> ``join_key_revoked``), the fields its ``causes``."""

    def refused(self, call: Call, answer: Answer) -> Exception:
        """A 4xx Status as a ServiceRefused with its reason and fields; anything else as usual."""
        status = parse_status_body(answer.content)
        if status is None or not 400 <= answer.status_code < 500:
            return super().refused(call, answer)
        reason = str(status.get("reason") or "")
        code = re.sub(r"(?<!^)(?=[A-Z])", "_", reason).lower() or f"http_{answer.status_code}"
        details = status.get("details")
        causes = details.get("causes") if isinstance(details, dict) else None
        fields = [
            {"field": str(cause.get("field", "")), "message": str(cause.get("message", ""))}
            for cause in causes or ()
            if isinstance(cause, dict)
        ]
        return refusal_class(answer.status_code, code)(
            str(status.get("message") or f"HTTP {answer.status_code}"),
            service=self.service,
            operation=f"{call.method} {call.path}",
            status_code=answer.status_code,
            code=code,
            details={"fields": fields} if fields else {},
        )


class NodeRegistryClient(InternalClient):
    """kuberay-service (port 8800): the joined nodes and their GPUs.

    The join-key methods, ``remove_node`` and ``cordon_node`` are an admin's: make the client with
    ``role="admin"``.
    """

    service = "kuberay_service"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("decoder", StatusErrors(self.service))
        super().__init__(*args, **kwargs)

    list_nodes = blocking(ops.list_nodes)
    remove_node = blocking(ops.remove_node)
    cordon_node = blocking(ops.cordon_node)
    create_join_key = blocking(ops.create_join_key)
    list_join_keys = blocking(ops.list_join_keys)
    revoke_join_key = blocking(ops.revoke_join_key)


class AsyncNodeRegistryClient(AsyncInternalClient):
    """The node registry over asyncio: the methods of :class:`NodeRegistryClient`, awaited."""

    service = "kuberay_service"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("decoder", StatusErrors(self.service))
        super().__init__(*args, **kwargs)

    list_nodes = awaiting(ops.list_nodes)
    remove_node = awaiting(ops.remove_node)
    cordon_node = awaiting(ops.cordon_node)
    create_join_key = awaiting(ops.create_join_key)
    list_join_keys = awaiting(ops.list_join_keys)
    revoke_join_key = awaiting(ops.revoke_join_key)
