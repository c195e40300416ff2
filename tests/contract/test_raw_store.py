"""The raw stores (in-memory and the real apiserver) obey the same apiserver rules."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import config as k8s_config
from kubernetes.aio import config as aio_config

from gridweave_controller import (
    AlreadyExists,
    Conflict,
    CRDNotInstalled,
    Invalid,
    NotFound,
    RawStore,
)
from gridweave_controller._kube_aio_store import AsyncKubeStore
from gridweave_controller._kube_store import FIELD_MANAGER, KubeStore
from gridweave_controller.store import ENDPOINTS, GROUP, JOBS, VERSION
from tests.support.kubeapi import KubeAPI, namespace_for_test
from tests.support.memory_store import MemoryStore


@pytest.fixture(
    params=[pytest.param("mock", id="mock"), pytest.param("real", marks=pytest.mark.kubeapi)]
)
def store(request: pytest.FixtureRequest, kube_namespace: str) -> Iterator[RawStore]:
    """Each raw store in turn (the real one with the test's Namespace created)."""
    if request.param == "mock":
        yield MemoryStore()
        return
    kubeapi = request.getfixturevalue("kubeapi")
    api_client = k8s_config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeapi.kubeconfig)
    )
    kube = KubeStore(api_client)
    try:
        with namespace_for_test(kubeapi, kube_namespace):
            yield kube
    finally:
        kube.close()


def job_body(name: str, **extra: Any) -> dict[str, Any]:
    """A minimal raw GridweaveJob."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "GridweaveJob",
        "metadata": {"name": name, "labels": {"app": "test"}},
        "spec": {"userId": "u1", "functionRef": "s3://f", "vramMb": 10},
        **extra,
    }


def test_create_sets_identity_drops_status_and_applies_defaults(
    store: RawStore, kube_namespace: str
) -> None:
    created = store.create(kube_namespace, JOBS, job_body("a", status={"phase": "Running"}))
    metadata = created["metadata"]
    assert metadata["generation"] == 1
    assert metadata["uid"] and metadata["creationTimestamp"].endswith("Z")
    # The status sent is dropped; the schema's status default shows on every read.
    assert created["status"] == {"phase": "Pending"}
    assert store.get(kube_namespace, JOBS, "a")["status"] == {"phase": "Pending"}
    assert created["spec"]["gpuCount"] == 1 and created["spec"]["vendor"] == "any"


def test_first_status_write_is_a_write_even_if_it_matches_the_default(
    store: RawStore, kube_namespace: str
) -> None:
    created = store.create(kube_namespace, JOBS, job_body("a"))
    first = store.patch_status(kube_namespace, JOBS, "a", {"status": {"phase": "Pending"}})
    assert int(first["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    cleared = store.patch_status(kube_namespace, JOBS, "a", {"status": {"phase": None}})
    assert "phase" not in cleared["status"]  # the default fills a missing status, not a field


def test_unknown_fields_are_pruned_without_error(store: RawStore, kube_namespace: str) -> None:
    body = job_body("a")
    body["spec"]["notInSchema"] = "x"
    created = store.create(kube_namespace, JOBS, body)
    assert "notInSchema" not in created["spec"]
    patched = store.patch_status(
        kube_namespace, JOBS, "a", {"status": {"phase": "Pending", "bogus": 1}}
    )
    assert patched["status"] == {"phase": "Pending"}


def test_status_writes_bump_resource_version_but_not_generation(
    store: RawStore, kube_namespace: str
) -> None:
    created = store.create(kube_namespace, JOBS, job_body("a"))
    version = created["metadata"]["resourceVersion"]
    patch = {"metadata": {"resourceVersion": version}, "status": {"phase": "Allocated"}}
    patched = store.patch_status(kube_namespace, JOBS, "a", patch)
    assert patched["metadata"]["generation"] == 1
    assert int(patched["metadata"]["resourceVersion"]) > int(version)
    assert patched["status"]["phase"] == "Allocated"
    with pytest.raises(Conflict) as caught:
        store.patch_status(kube_namespace, JOBS, "a", patch)
    assert caught.value.status["reason"] == "Conflict"


def test_patch_that_changes_nothing_keeps_the_resource_version(
    store: RawStore, kube_namespace: str
) -> None:
    store.create(kube_namespace, JOBS, job_body("a"))
    first = store.patch_status(kube_namespace, JOBS, "a", {"status": {"phase": "Pending"}})
    second = store.patch_status(kube_namespace, JOBS, "a", {"status": {"phase": "Pending"}})
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_merge_patch_null_removes_and_lists_are_replaced(
    store: RawStore, kube_namespace: str
) -> None:
    store.create(kube_namespace, JOBS, job_body("a"))
    store.patch_status(kube_namespace, JOBS, "a", {"status": {"node": "n1", "gpuIndices": [0, 1]}})
    patched = store.patch_status(
        kube_namespace, JOBS, "a", {"status": {"node": None, "gpuIndices": [3]}}
    )
    assert patched["status"] == {"phase": "Pending", "gpuIndices": [3]}


def test_errors_map_to_the_same_classes(store: RawStore, kube_namespace: str) -> None:
    store.create(kube_namespace, JOBS, job_body("a"))
    with pytest.raises(AlreadyExists):
        store.create(kube_namespace, JOBS, job_body("a"))
    with pytest.raises(NotFound) as missing:
        store.get(kube_namespace, JOBS, "nope")
    assert not isinstance(missing.value, CRDNotInstalled)
    assert missing.value.status["details"]["name"] == "nope"
    with pytest.raises(CRDNotInstalled):
        store.get(kube_namespace, "gridweavewidgets", "a")
    with pytest.raises(Invalid) as bad_name:
        store.create(kube_namespace, JOBS, job_body("Bad_Name"))
    assert bad_name.value.field == "metadata.name"
    with pytest.raises(Invalid) as bad_phase:
        store.patch_status(kube_namespace, JOBS, "a", {"status": {"phase": "Bogus"}})
    assert bad_phase.value.field == "status.phase"
    with pytest.raises(Invalid) as bad_reason:
        condition = {
            "type": "Running",
            "status": "True",
            "reason": "not camel",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        store.patch_status(kube_namespace, JOBS, "a", {"status": {"conditions": [condition]}})
    assert bad_reason.value.field is not None and "reason" in bad_reason.value.field
    with pytest.raises(Invalid) as bad_spec:
        body = job_body("b")
        del body["spec"]["vramMb"]
        store.create(kube_namespace, JOBS, body)
    assert bad_spec.value.field == "spec.vramMb"
    with pytest.raises(NotFound):
        store.delete(kube_namespace, JOBS, "nope")


def test_objects_handed_out_are_copies(store: RawStore, kube_namespace: str) -> None:
    body = job_body("a")
    created = store.create(kube_namespace, JOBS, body)
    body["spec"]["userId"] = "changed-after-create"
    created["spec"]["userId"] = "changed-after-read"
    read = store.get(kube_namespace, JOBS, "a")
    assert read["spec"]["userId"] == "u1"
    listed = store.list(kube_namespace, JOBS, None)
    listed[0]["metadata"]["labels"]["app"] = "changed"
    assert store.list(kube_namespace, JOBS, "app=test")[0]["metadata"]["name"] == "a"


def test_bad_label_selector_is_invalid(store: RawStore, kube_namespace: str) -> None:
    with pytest.raises(Invalid):
        store.list(kube_namespace, JOBS, "app in (a")


def test_endpoint_needs_model_or_image(store: RawStore, kube_namespace: str) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "GridweaveEndpoint",
        "metadata": {"name": f"ep-{uuid.uuid4().hex[:6]}"},
        "spec": {"userId": "u", "mode": "vllm", "vramMb": 10},
    }
    with pytest.raises(Invalid) as caught:
        store.create(kube_namespace, "gridweaveendpoints", body)
    assert caught.value.field == "spec.model"


def test_a_trailing_newline_does_not_satisfy_a_pattern(
    store: RawStore, kube_namespace: str
) -> None:
    created = store.create(kube_namespace, JOBS, job_body("nl"))
    condition = {
        "type": "Finished",
        "status": "True",
        "reason": "Failed\n",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    patch = {
        "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
        "status": {"phase": "Failed", "conditions": [condition]},
    }
    with pytest.raises(Invalid):
        store.patch_status(kube_namespace, JOBS, "nl", patch)


@pytest.mark.parametrize(
    "status",
    [
        {"phase": "Pending", "allocatedAt": "yesterday"},
        {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "Allocated",
                    "status": status,
                    "reason": "Test",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
                for status in ("True", "False")
            ],
        },
    ],
    ids=["bad-date-time", "duplicate-condition-type"],
)
def test_formats_and_list_map_keys_are_enforced(
    store: RawStore, kube_namespace: str, status: dict[str, Any]
) -> None:
    created = store.create(kube_namespace, JOBS, job_body("fmt"))
    patch = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}}
    with pytest.raises(Invalid):
        store.patch_status(kube_namespace, JOBS, "fmt", patch | {"status": status})


class TestNamesTheTypedClientCannotTake:
    """The CRDs' root CEL rule: a name is a DNS-1123 label, as ``check_name`` requires."""

    @pytest.mark.parametrize("name", ["a.b", "x" * 64, "-a"], ids=["dot", "64-chars", "dash"])
    def test_refused(self, store: RawStore, kube_namespace: str, name: str) -> None:
        with pytest.raises(Invalid) as caught:
            store.create(kube_namespace, JOBS, job_body(name))
        assert caught.value.field == "metadata.name"

    def test_longest_label_is_taken(self, store: RawStore, kube_namespace: str) -> None:
        name = "a" * 63
        assert store.create(kube_namespace, JOBS, job_body(name))["metadata"]["name"] == name


@pytest.mark.parametrize("plural", [JOBS, ENDPOINTS])
def test_gpu_indices_are_a_set(store: RawStore, kube_namespace: str, plural: str) -> None:
    body = job_body("dup")
    if plural == ENDPOINTS:
        body["kind"] = "GridweaveEndpoint"
        body["spec"] = {"userId": "u1", "mode": "vllm", "model": "m", "vramMb": 10}
    store.create(kube_namespace, plural, body)
    with pytest.raises(Invalid) as caught:
        store.patch_status(kube_namespace, plural, "dup", {"status": {"gpuIndices": [0, 1, 1]}})
    assert caught.value.field == "status.gpuIndices[2]"
    assert caught.value.status["details"]["causes"][0]["reason"] == "FieldValueDuplicate"
    patched = store.patch_status(kube_namespace, plural, "dup", {"status": {"gpuIndices": [1, 0]}})
    assert patched["status"]["gpuIndices"] == [1, 0]


class TestFieldSelectors:
    """``spec.userId`` is a selectable field; ``metadata.name``/``namespace`` always are."""

    @pytest.fixture
    def users(self, store: RawStore, kube_namespace: str) -> RawStore:
        for name, user in [("a", "alice"), ("b", "bob"), ("c", "alice"), ("d", "x,y=z")]:
            body = job_body(name)
            body["spec"]["userId"] = user
            del body["metadata"]["labels"]  # found without any label
            store.create(kube_namespace, JOBS, body)
        return store

    @pytest.mark.parametrize(
        ("selector", "names"),
        [
            ("spec.userId=alice", ["a", "c"]),
            ("spec.userId==alice", ["a", "c"]),
            ("spec.userId!=alice", ["b", "d"]),
            ("spec.userId=alice,metadata.name!=a", ["c"]),
            ("metadata.name=b", ["b"]),
            ("spec.userId=nobody", []),
            ("spec.userId=", []),
            ("spec.userId=x\\,y\\=z", ["d"]),
            ("", ["a", "b", "c", "d"]),
        ],
    )
    def test_matches(
        self, users: RawStore, kube_namespace: str, selector: str, names: list[str]
    ) -> None:
        found = users.list(kube_namespace, JOBS, None, field_selector=selector)
        assert [obj["metadata"]["name"] for obj in found] == names

    def test_namespace_field(self, users: RawStore, kube_namespace: str) -> None:
        found = users.list(kube_namespace, JOBS, None, field_selector="metadata.namespace=other")
        assert found == []
        selector = f"metadata.namespace={kube_namespace},spec.userId=bob"
        found = users.list(kube_namespace, JOBS, None, field_selector=selector)
        assert [obj["metadata"]["name"] for obj in found] == ["b"]

    @pytest.mark.parametrize(
        ("selector", "message"),
        [
            ("spec.vramMb=10", "field label not supported: spec.vramMb"),
            ("spec.userId", "can't understand 'spec.userId'"),
            ("spec.userId=a=b", "unescaped character in value"),
            ("spec.userId=a\\b", "invalid escape sequence"),
        ],
    )
    def test_refused(
        self, store: RawStore, kube_namespace: str, selector: str, message: str
    ) -> None:
        with pytest.raises(Invalid) as caught:
            store.list(kube_namespace, JOBS, None, field_selector=selector)
        assert caught.value.status["reason"] == "BadRequest"
        assert message in str(caught.value)


@pytest.mark.kubeapi
def test_the_kube_stores_write_as_the_controllers_field_manager(
    kubeapi: KubeAPI, kube_namespace: str
) -> None:
    """managedFields name gridweave-controller for the spec (create) and the status."""
    api_client = k8s_config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeapi.kubeconfig)
    )
    store = KubeStore(api_client)
    try:
        store.create(kube_namespace, JOBS, job_body("sync"))
        status = {"phase": "Allocated", "node": "n1", "gpuIndices": [0]}
        written = store.patch_status(kube_namespace, JOBS, "sync", {"status": status})
    finally:
        store.close()

    async def through_asyncio() -> dict[str, Any]:
        aio_client = await aio_config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeapi.kubeconfig)
        )
        aio_store = AsyncKubeStore(aio_client)
        try:
            await aio_store.create(kube_namespace, JOBS, job_body("async"))
            return await aio_store.patch_status(kube_namespace, JOBS, "async", {"status": status})
        finally:
            await aio_store.close()

    for obj in (written, asyncio.run(through_asyncio())):
        entries = {
            (m["manager"], m["operation"], m.get("subresource", ""))
            for m in obj["metadata"]["managedFields"]
        }
        assert entries == {(FIELD_MANAGER, "Update", ""), (FIELD_MANAGER, "Update", "status")}
