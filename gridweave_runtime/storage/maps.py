"""A map's objects, and the records its workers write: where they are and how they read.

A map is one function over many inputs, run by P workers (each an ordinary GridweaveJob
with ``spec.map``: one allocation, billed as a job). Its objects:

- ``maps/<map id>/function.pkl``: the pickled function (the SDK's bytes, opaque here);
- ``maps/<map id>/manifest.json``: the platform's record of the map (its owner, inputs,
  chunk size and workers), written once every worker was submitted;
- ``maps/<map id>/inputs/<chunk>``: chunk ``c`` of the inputs, a pickled list of
  ``(args, kwargs)``: inputs ``c * chunk_items`` onwards (the last chunk may be short);
- ``maps/<map id>/outputs/<chunk>``: what the worker that ran chunk ``c`` stored (a chunk
  record, ``gridweave_clients.maps.chunk_record``): a JSON header with each input's
  status, then each input's payload;
- ``maps/<map id>/workers/<k>/progress.json``: worker ``k``'s counts and the digests of the
  chunks it stored, rewritten after each chunk (``gridweave_clients.maps.WorkerProgress``).

Worker ``k`` of ``P`` runs chunks ``k, k + P, k + 2P, ...`` (:func:`worker_chunks`). Every
object is written by the trusted side (the platform, the workers' trusted process): the
user's code runs in a container that cannot reach the store.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MapObjects", "chunk_count", "chunk_items_of", "map_objects", "worker_chunks"]


@dataclass(frozen=True, slots=True)
class MapObjects:
    """The keys (relative to the store's root) of one map's objects."""

    map_id: str

    @property
    def function(self) -> str:
        return f"maps/{self.map_id}/function.pkl"

    @property
    def manifest(self) -> str:
        """What the platform keeps of the map (whose, its shape), written last."""
        return f"maps/{self.map_id}/manifest.json"

    def inputs(self, chunk: int) -> str:
        return f"maps/{self.map_id}/inputs/{chunk:06d}"

    def outputs(self, chunk: int) -> str:
        return f"maps/{self.map_id}/outputs/{chunk:06d}"

    def progress(self, worker: int) -> str:
        return f"maps/{self.map_id}/workers/{worker}/progress.json"


def map_objects(map_id: str) -> MapObjects:
    """Where map ``map_id``'s objects are."""
    return MapObjects(map_id)


def chunk_count(items: int, chunk_items: int) -> int:
    """How many chunks ``items`` inputs make, ``chunk_items`` to a chunk."""
    return math.ceil(items / chunk_items)


def chunk_items_of(chunk: int, items: int, chunk_items: int) -> int:
    """How many inputs chunk ``chunk`` holds (the last may hold fewer)."""
    return max(0, min(chunk_items, items - chunk * chunk_items))


def worker_chunks(worker: int, workers: int, chunks: int) -> range:
    """The chunks worker ``worker`` of ``workers`` runs, in order."""
    return range(worker, chunks, workers)
