"""kuberay-service's memory of the objects it was answered: exact versions, bounded."""

from __future__ import annotations

from typing import Any

from gridweave_controller import Endpoint, Job
from kuberay_service.recent_objects import RecentObjects


def job(name: str, version: str) -> Job:
    """A job as the apiserver answers it, at ``version``."""
    raw: dict[str, Any] = {"metadata": {"name": name, "resourceVersion": version}, "spec": {}}
    return Job.from_raw(raw)


class TestRecentObjects:
    def test_only_the_exact_kind_name_and_version_is_recalled(self) -> None:
        recent = RecentObjects()
        recent.remember(job("a", "5"))
        recent.remember([job("b", "6")])  # a list is not kept
        recalled = recent.recall(Job, "a", "5")
        assert recalled is not None and recalled.raw["metadata"]["resourceVersion"] == "5"
        assert recent.recall(Job, "a", "4") is None
        assert recent.recall(Endpoint, "a", "5") is None
        assert recent.recall(Job, "b", "6") is None
        recent.remember(job("a", "7"))  # a newer answer replaces the older one
        assert recent.recall(Job, "a", "5") is None
        assert recent.recall(Job, "a", "7") is not None

    def test_the_least_recently_seen_object_goes_first(self) -> None:
        recent = RecentObjects(capacity=2)
        recent.remember(job("a", "1"))
        recent.remember(job("b", "2"))
        recent.remember(job("a", "3"))
        recent.remember(job("c", "4"))
        assert len(recent) == 2
        assert recent.recall(Job, "b", "2") is None
        assert recent.recall(Job, "a", "3") is not None
        assert recent.recall(Job, "c", "4") is not None
