"""The typed models: immutable, missing status reads as Pending, raw kept."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gridweave_controller import Endpoint, EndpointPhase, Job, JobPhase


def raw_job(**status: Any) -> dict[str, Any]:
    """A raw GridweaveJob as the apiserver returns it."""
    raw: dict[str, Any] = {
        "apiVersion": "gridweave.io/v1",
        "kind": "GridweaveJob",
        "metadata": {
            "name": "job-1",
            "namespace": "gridweave",
            "uid": "u-1",
            "resourceVersion": "42",
            "generation": 1,
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "labels": {"gridweave.io/user": "alice"},
            "managedFields": [{"manager": "x"}],
        },
        "spec": {"userId": "alice", "functionRef": "s3://f", "vramMb": 100},
    }
    if status:
        raw["status"] = status
    return raw


def test_missing_status_reads_as_pending() -> None:
    job = Job.from_raw(raw_job())
    assert job.phase is JobPhase.PENDING
    assert job.status.attempts == 0 and job.status.conditions == ()
    endpoint = Endpoint.from_raw(
        {
            "metadata": {"name": "ep-1"},
            "spec": {"userId": "a", "mode": "vllm", "vramMb": 1, "model": "m"},
        }
    )
    assert endpoint.phase is EndpointPhase.PENDING and endpoint.status.health == "Unknown"


def test_fields_are_typed_and_raw_is_kept() -> None:
    raw = raw_job(
        phase="Running",
        gpuIndices=[0, 2],
        startedAt="2026-01-02T03:04:06Z",
        conditions=[
            {
                "type": "Running",
                "status": "True",
                "reason": "Started",
                "message": "",
                "lastTransitionTime": "2026-01-02T03:04:06Z",
                "observedGeneration": 1,
            }
        ],
    )
    job = Job.from_raw(raw)
    assert job.phase is JobPhase.RUNNING
    assert job.status.gpu_indices == (0, 2)
    assert job.status.started_at is not None and job.status.started_at.tzinfo is not None
    assert job.metadata.resource_version == "42"
    assert job.raw is raw
    running = job.status.condition("Running")
    assert running is not None and running.reason == "Started"
    assert job.status.condition("Finished") is None


def test_models_are_frozen() -> None:
    job = Job.from_raw(raw_job())
    with pytest.raises(ValidationError):
        job.spec.vram_mb = 1  # type: ignore[misc]
    with pytest.raises(ValidationError):
        job.status.phase = JobPhase.FAILED  # type: ignore[misc]
