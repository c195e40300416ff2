"""A test double of kuberay-service's ``GET /v1/nodes``, for answers the real route never gives.

It answers what the wire model (:mod:`gridweave_clients.nodes.models`) declares, refuses a
missing or wrong internal token like every service (401 with Gridweave's error body), and
records the requests it saw. Plug it into a client with ``transport=registry.transport()``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from gridweave_clients.nodes import NodeGpuResponse, NodeListResponse, NodeResponse
from gridweave_controller.vendors import GpuVendor

__all__ = ["TOKEN", "FakeNodeRegistry", "gpu", "node"]

TOKEN = "registry-test-token"


def gpu(
    index: int, vendor: GpuVendor = "nvidia", vram_mb: int = 81_920, **extra: Any
) -> NodeGpuResponse:
    """One GPU of the answer (model named after the size)."""
    fields: dict[str, Any] = {
        "index": index,
        "vendor": vendor,
        "model": f"{vendor.upper()} {vram_mb // 1024}GB",
        "vram_mb": vram_mb,
    }
    return NodeGpuResponse.model_validate(fields | extra)


def node(name: str, gpus: list[NodeGpuResponse], **extra: Any) -> NodeResponse:
    """One node of the answer, Ready unless ``status`` says otherwise."""
    return NodeResponse.model_validate({"name": name, "status": "Ready", "gpus": gpus} | extra)


@dataclass
class FakeNodeRegistry:
    """Serves ``nodes`` (or ``raw``, a body as is) at ``GET /v1/nodes``."""

    nodes: list[NodeResponse] = field(default_factory=list)
    raw: Any = None
    status_code: int = 200
    requests: list[httpx.Request] = field(default_factory=list)

    def answer(self) -> dict[str, Any]:
        """The JSON body a real registry would send for ``nodes``."""
        return NodeListResponse(nodes=tuple(self.nodes)).model_dump(mode="json")

    def handle(self, request: httpx.Request) -> httpx.Response:
        """One request, as kuberay-service would answer it."""
        self.requests.append(request)
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            body = {"error": {"code": "unauthorized", "message": "a service token is required"}}
            return httpx.Response(401, json=body)
        if request.method != "GET" or request.url.path != "/v1/nodes":
            return httpx.Response(404, json={"error": {"code": "not_found", "message": "no route"}})
        if self.status_code != 200:
            return httpx.Response(
                self.status_code, json={"error": {"code": "failed", "message": "x"}}
            )
        body = self.answer() if self.raw is None else self.raw
        return httpx.Response(
            200, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
        )

    def transport(self) -> httpx.MockTransport:
        """An httpx transport that sends every request to :meth:`handle`."""
        return httpx.MockTransport(self.handle)
