"""The in-memory transport: ``gridweave_controller.crd``'s functions over a :class:`MemoryStore`.

Same functions, same signatures as the direct transport (a test compares them): both bind
them to a :class:`~gridweave_controller._active.ActiveClient`, and the typed layer
(validation, phase machines, conditions, read-modify-write) is the library's own
:class:`~gridweave_controller.client.CrdClient`, so only the storage differs. Extras for
tests: :data:`STORE`, :func:`reset` and :func:`inject_conflicts`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from gridweave_controller._active import ActiveClient
from gridweave_controller._kubeconfig import resolve_namespace
from gridweave_controller.client import CrdClient
from gridweave_controller.operations import FUNCTION_NAMES
from tests.support.memory_store import MemoryStore

#: The one in-memory "cluster" every mock client shares.
STORE = MemoryStore()


def _new_client(namespace: str | None) -> CrdClient:
    return CrdClient(STORE, resolve_namespace(namespace))


_ACTIVE: ActiveClient[CrdClient] = ActiveClient(lambda: _new_client(None))


def init_k8s_client(
    *, kubeconfig: str | os.PathLike[str] | None = None, namespace: str | None = None
) -> CrdClient:
    """Use the in-memory store in ``namespace`` (``kubeconfig`` is accepted and ignored)."""
    client = _new_client(namespace)
    _ACTIVE.install(client)
    return client


def use_client(client: CrdClient) -> None:
    """Make ``client`` the one the module functions use."""
    _ACTIVE.install(client)


def reset() -> None:
    """Empty the store and forget the active client."""
    STORE.clear()
    _ACTIVE.install(None)


def inject_conflicts(count: int) -> None:
    """Make the next ``count`` status writes fail with Conflict."""
    STORE.inject_conflicts(count)


if TYPE_CHECKING:
    # The operations and watches: ``crd``'s functions, whose signatures this module's share
    # (module ``__getattr__`` below binds them to this module's client). A test compares them.
    from gridweave_controller.crd import *  # noqa: F403


def __getattr__(name: str) -> Any:
    """An operation or watch of this module's client, bound on first use."""
    if name not in FUNCTION_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    function = getattr(_ACTIVE, name)
    globals()[name] = function  # found directly from now on
    return function
