"""Session fixtures shared by the whole suite: the real servers the tests need."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tests.support.kubeapi import KubeAPI, KubeAPIUnavailable, kube_api

pytest_plugins: list[str] = []


def _unavailable(what: str, exc: Exception) -> None:
    """A missing real server fails the run under CI=true; elsewhere it skips, loudly."""
    message = f"{what} unavailable: {exc}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    print(f"\n*** SKIPPING real-{what} tests: {message}\n")
    pytest.skip(message)


@pytest.fixture(scope="session")
def kubeapi() -> Iterator[KubeAPI]:
    """A real Kubernetes API server with the Gridweave CRDs installed (session scope)."""
    try:
        context = kube_api()
        api = context.__enter__()
    except KubeAPIUnavailable as exc:
        _unavailable("Kubernetes API server", exc)
        raise  # unreachable: pytest.skip/fail raise
    try:
        yield api
    finally:
        context.__exit__(None, None, None)


@pytest.fixture
def kube_namespace() -> str:
    """A namespace name of its own for one test (the test apiserver needs no Namespace object)."""
    return f"gw-test-{uuid.uuid4().hex[:10]}"
