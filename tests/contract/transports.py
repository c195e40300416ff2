"""The transports the contract suite runs against and how their requests are counted.

A transport is a module with the ``gridweave_controller.crd`` functions, initialized on a
fresh namespace. Requests are counted where they reach the store (the apiserver, or the
in-memory store behind the mock or behind kuberay-service for the proxied transport).
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from gridweave_controller import CrdClient

#: mock: tests/mock_crd over the in-memory store; real: gridweave_controller.crd over the
#: real apiserver; proxied: job_gateway.crd_client over HTTP to kuberay-service;
#: batched: the asyncio proxied client with every write inside ``POST /v1/crd/batch``.
TRANSPORTS = [
    pytest.param("mock", id="mock"),
    pytest.param("real", id="real", marks=pytest.mark.kubeapi),
    pytest.param("proxied-mock", id="proxied-mock"),
    pytest.param("proxied-real", id="proxied-real", marks=pytest.mark.kubeapi),
    pytest.param("proxied-batched-mock", id="proxied-batched-mock"),
]

_MEMORY_VERBS = {
    "create": "POST",
    "get": "GET",
    "list": "GET",
    "delete": "DELETE",
    "patch_status": "PATCH",
}


@dataclass
class Transport:
    """One transport under test: its module of functions and the client behind it."""

    name: str
    api: Any  # a module with the crd functions (ModuleType; Any so calls type-check)
    client: CrdClient  # a typed client on the same store, for the tests' own reads
    namespace: str
    #: The store the operations reach (behind kuberay-service for the proxied transports).
    served_store: Any
    _counters: list[Counter[str]] = field(default_factory=list)

    def record(self, verb: str) -> None:
        """Count one request against every open :meth:`count_requests` block."""
        for counter in self._counters:
            counter[verb] += 1

    @contextmanager
    def count_requests(self) -> Iterator[Counter[str]]:
        """Count the requests (by HTTP verb) the transport sends inside the block."""
        counter: Counter[str] = Counter()
        self._counters.append(counter)
        try:
            yield counter
        finally:
            self._counters.remove(counter)


def spy_memory_store(transport: Transport, store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for method, verb in _MEMORY_VERBS.items():
        original = getattr(store, method)

        def spy(
            *args: Any, _original: Callable[..., Any] = original, _verb: str = verb, **kwargs: Any
        ) -> Any:
            transport.record(_verb)
            return _original(*args, **kwargs)

        monkeypatch.setattr(store, method, spy)


def spy_kube_store(transport: Transport, rest: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Count the requests of a Kubernetes client's REST layer (blocking or asyncio)."""
    original: Callable[..., Any] = rest.request

    def spy(method: str, *args: Any, **kwargs: Any) -> Any:
        transport.record(method.upper())  # counted when sent (an asyncio call: when awaited)
        return original(method, *args, **kwargs)

    monkeypatch.setattr(rest, "request", spy)


def see_status_writes(
    store: Any, monkeypatch: pytest.MonkeyPatch, see: Callable[[dict[str, Any]], None]
) -> None:
    """Call ``see`` with each object a status write on ``store`` (blocking or asyncio) returns."""
    original: Callable[..., Any] = store.patch_status
    if inspect.iscoroutinefunction(original):

        async def awaited(*args: Any) -> dict[str, Any]:
            result: dict[str, Any] = await original(*args)
            see(result)
            return result

        monkeypatch.setattr(store, "patch_status", awaited)
        return

    def blocking(*args: Any) -> dict[str, Any]:
        result: dict[str, Any] = original(*args)
        see(result)
        return result

    monkeypatch.setattr(store, "patch_status", blocking)
