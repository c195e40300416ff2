"""The objects kuberay-service was last answered, so a known resourceVersion saves a read.

A setter called with the caller's copy of the object (``known=``, an informer's) computes
its patch from that copy instead of reading the object first. Over HTTP the copy travels as
its resourceVersion only: kuberay-service never computes a status from what a caller sends
(a forged status could make an illegal move look legal). It looks the version up here,
among the objects the apiserver answered its own calls with (creates, reads, setters);
the same name at the same resourceVersion is the same object, so the patch is exactly the
one a fresh read would give, and the write stays guarded by that version. Any other
version, or an object not seen, is read as before.

Bounded: the ``capacity`` most recently seen objects (a few KiB each).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from gridweave_controller.models import Endpoint, Job

__all__ = ["DEFAULT_CAPACITY", "RecentObjects"]

#: Objects kept: a gateway's worth of waiting jobs at about 2 KiB each (~32 MiB).
DEFAULT_CAPACITY = 16384


class RecentObjects:
    """The last object seen of each (kind, name), the ``capacity`` most recent ones."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._objects: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()

    def remember(self, result: object) -> None:
        """Keep ``result`` if it is one object (a list or nothing is not kept)."""
        if not isinstance(result, Job | Endpoint):
            return
        key = (result.KIND, result.name)
        self._objects[key] = result.raw
        self._objects.move_to_end(key)
        if len(self._objects) > self.capacity:
            self._objects.popitem(last=False)

    def recall(self, kind: type[Job] | type[Endpoint], name: str, version: str) -> Any:
        """The object ``name`` of ``kind`` at exactly ``version``, typed; None if not seen."""
        raw = self._objects.get((kind.KIND, name))
        if raw is None or raw["metadata"].get("resourceVersion") != version:
            return None
        return kind.from_raw(raw)

    def __len__(self) -> int:
        return len(self._objects)
