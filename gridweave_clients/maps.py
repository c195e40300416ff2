"""A map's wire models: a worker's share of a map, as the gateway takes and answers it.

A map (``Function.map`` in the SDK) is one function over many inputs, run by ``workers``
jobs: worker ``k`` runs chunks ``k, k + workers, ...`` of ``chunk_items`` inputs each (see
``gridweave_runtime.storage.maps``). The bounds are the CRD's (``spec.map``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridweave_controller.validation import (
    MAX_CHUNK_ITEMS,
    MAX_MAP_ITEMS,
    MAX_MAP_RETRIES,
    MAX_MAP_WORKERS,
)

__all__ = ["MapId", "MapShareModel"]

MapId = Annotated[
    str, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
]


class MapShareModel(BaseModel):
    """One worker's share of a map: worker ``worker`` of ``workers`` over ``items`` inputs,
    ``chunk_items`` to a chunk, an input that raised tried again ``retries`` times at most."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    map_id: MapId
    worker: int = Field(strict=True, ge=0, lt=MAX_MAP_WORKERS)
    workers: int = Field(strict=True, ge=1, le=MAX_MAP_WORKERS)
    items: int = Field(strict=True, ge=1, le=MAX_MAP_ITEMS)
    chunk_items: int = Field(strict=True, ge=1, le=MAX_CHUNK_ITEMS)
    retries: int = Field(default=0, strict=True, ge=0, le=MAX_MAP_RETRIES)

    @model_validator(mode="after")
    def _worker_below_workers(self) -> MapShareModel:
        if self.worker >= self.workers:
            raise ValueError("worker must be below workers")
        return self
