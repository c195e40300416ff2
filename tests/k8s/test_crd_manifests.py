"""The CRD manifests, proved against the real Kubernetes API server with the raw client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.kubeapi import CRD_MANIFESTS, REPO_ROOT, KubeAPI, api_client_for

GROUP, VERSION = "gridweave.io", "v1"
JOBS, ENDPOINTS = "gridweavejobs", "gridweaveendpoints"

pytestmark = pytest.mark.kubeapi

CONDITION = {
    "type": "Scheduled",
    "status": "True",
    "reason": "NodeSelected",
    "message": "node gpu-1 has 24000 MiB free",
    "lastTransitionTime": "2026-01-02T03:04:05Z",
    "observedGeneration": 1,
}

JOB_SPEC = {
    "userId": "user@example.com",
    "functionRef": "file:///var/gridweave/objects/fn-123.pkl",
    "vramMb": 8000,
    "gpuCount": 2,
    "vendor": "nvidia",
    "owner": "team-a",
    "timeoutSeconds": 600,
    "maxRetries": 3,
    "argsRef": "file:///var/gridweave/objects/args-123.pkl",
    "priority": 5,
}
JOB_STATUS = {
    "phase": "Completed",
    "node": "gpu-1",
    "gpuIndices": [0, 3],
    "allocatedAt": "2026-01-02T03:04:05Z",
    "startedAt": "2026-01-02T03:04:06Z",
    "finishedAt": "2026-01-02T03:05:06Z",
    "wallSeconds": 60.25,
    "billedSeconds": 61,
    "attempts": 1,
    "reason": "Succeeded",
    "message": "exit 0",
    "resultRef": "file:///var/gridweave/objects/result-123.pkl",
    "conditions": [CONDITION],
    "observedGeneration": 1,
}
ENDPOINT_SPEC = {
    "userId": "user@example.com",
    "model": "Qwen/Qwen2.5-0.5B-Instruct",
    "image": f"registry.example.com/serve@sha256:{'ab' * 32}",
    "mode": "vllm",
    "vramMb": 16000,
    "gpuCount": 1,
    "vendor": "amd",
    "replicas": 2,
    "owner": "team-a",
    "modelRef": "s3://gridweave/models/qwen",
    "minReplicas": 1,
    "maxReplicas": 2,
    "idleSeconds": 600,
    "pricing": {"microCreditsPerSecond": 250, "microCreditsPerRequest": 10},
}
ENDPOINT_STATUS = {
    "phase": "Running",
    "url": "http://gpu-2:9000/v1",
    "node": "gpu-2",
    "gpuIndices": [1],
    "readyReplicas": 2,
    "health": "Healthy",
    "startedAt": "2026-01-02T03:04:05Z",
    "stoppedAt": "2026-01-02T04:04:05Z",
    "billedSeconds": 3600,
    "reason": "Deployed",
    "message": "2/2 replicas ready",
    "conditions": [CONDITION],
    "observedGeneration": 1,
}


@pytest.fixture(scope="module")
def api(kubeapi: KubeAPI) -> Iterator[client.CustomObjectsApi]:
    with api_client_for(kubeapi.kubeconfig) as api_client:
        yield client.CustomObjectsApi(api_client)


def _body(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "metadata": {"name": name},
        "spec": json.loads(json.dumps(spec)),
    }


def _create(api: client.CustomObjectsApi, ns: str, plural: str, body: dict[str, Any]) -> Any:
    return api.create_namespaced_custom_object(GROUP, VERSION, ns, plural, body)


def _status_code(call: Any) -> int:
    with pytest.raises(ApiException) as info:
        call()
    return int(info.value.status)


KINDS = [
    pytest.param(JOBS, "GridweaveJob", JOB_SPEC, JOB_STATUS, id="job"),
    pytest.param(ENDPOINTS, "GridweaveEndpoint", ENDPOINT_SPEC, ENDPOINT_STATUS, id="endpoint"),
]


@pytest.mark.parametrize(("plural", "kind", "spec", "status"), KINDS)
class TestEveryFieldRoundTrips:
    def test_spec_is_kept_and_status_ignored_on_create(
        self, api, kube_namespace, plural, kind, spec, status
    ):
        body = _body(kind, "round-trip", spec) | {"status": status}
        created = _create(api, kube_namespace, plural, body)
        assert created["spec"] == spec
        assert created["status"] == {"phase": "Pending"}  # sent status dropped; default read
        assert created["metadata"]["generation"] == 1

    def test_status_is_written_only_through_the_subresource(
        self, api, kube_namespace, plural, kind, spec, status
    ):
        created = _create(api, kube_namespace, plural, _body(kind, "status-only", spec))
        patch = {"status": status}
        main = api.patch_namespaced_custom_object(
            GROUP, VERSION, kube_namespace, plural, "status-only", patch
        )
        assert main["status"] == {"phase": "Pending"}
        written = api.patch_namespaced_custom_object_status(
            GROUP, VERSION, kube_namespace, plural, "status-only", patch
        )
        assert written["status"] == status
        assert written["metadata"]["generation"] == created["metadata"]["generation"]
        read = api.get_namespaced_custom_object(
            GROUP, VERSION, kube_namespace, plural, "status-only"
        )
        assert read["status"] == status
        assert read["spec"] == spec


class TestDefaults:
    def test_job_defaults_gpu_count_and_vendor(self, api, kube_namespace):
        spec = {"userId": "u1", "functionRef": "file:///f.pkl", "vramMb": 1}
        created = _create(api, kube_namespace, JOBS, _body("GridweaveJob", "defaults", spec))
        assert created["spec"]["gpuCount"] == 1
        assert created["spec"]["vendor"] == "any"


class TestRefusedWith422:
    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"vendor": "intel"}, "spec.vendor"),
            ({"vramMb": 0}, "spec.vramMb"),
            ({"gpuCount": 0}, "spec.gpuCount"),
        ],
    )
    def test_bad_job_spec(self, api, kube_namespace, change, field):
        body = _body("GridweaveJob", "bad-spec", JOB_SPEC | change)
        with pytest.raises(ApiException) as info:
            _create(api, kube_namespace, JOBS, body)
        assert info.value.status == 422
        assert field in str(info.value.body)

    def test_missing_required_field(self, api, kube_namespace):
        spec = {k: v for k, v in JOB_SPEC.items() if k != "functionRef"}
        with pytest.raises(ApiException) as info:
            _create(api, kube_namespace, JOBS, _body("GridweaveJob", "no-fn", spec))
        assert info.value.status == 422
        assert "spec.functionRef" in str(info.value.body)

    def test_endpoint_needs_model_or_image(self, api, kube_namespace):
        spec = {k: v for k, v in ENDPOINT_SPEC.items() if k not in ("model", "image", "modelRef")}
        with pytest.raises(ApiException) as info:
            _create(api, kube_namespace, ENDPOINTS, _body("GridweaveEndpoint", "no-model", spec))
        assert info.value.status == 422
        assert "one of model, image, modelRef or functionRef" in str(info.value.body)

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"mode": "custom", "image": None}, "needs functionRef"),
            ({"minReplicas": 3, "maxReplicas": 2}, "minReplicas must not exceed maxReplicas"),
            ({"pip": ["six==1.16.0"]}, "pip is only for a custom endpoint"),
        ],
        ids=["custom-without-class", "min-over-max", "pip-not-custom"],
    )
    def test_endpoint_rules(self, api, kube_namespace, change, message):
        spec = {k: v for k, v in (ENDPOINT_SPEC | change).items() if v is not None}
        with pytest.raises(ApiException) as info:
            _create(api, kube_namespace, ENDPOINTS, _body("GridweaveEndpoint", "rule", spec))
        assert info.value.status == 422
        assert message in str(info.value.body)

    def test_endpoint_serving_fields_are_kept(self, api, kube_namespace):
        spec = ENDPOINT_SPEC | {
            "mode": "transformers",
            "modelRef": "s3://gridweave/models/tiny",
            "owner": "team-a",
            "minReplicas": 1,
            "maxReplicas": 3,
            "idleSeconds": 300,
        }
        made = _create(api, kube_namespace, ENDPOINTS, _body("GridweaveEndpoint", "kept", spec))
        assert {k: made["spec"][k] for k in spec} == spec

    def test_bad_endpoint_mode(self, api, kube_namespace):
        body = _body("GridweaveEndpoint", "bad-mode", ENDPOINT_SPEC | {"mode": "tgi"})
        assert _status_code(lambda: _create(api, kube_namespace, ENDPOINTS, body)) == 422

    @pytest.mark.parametrize(
        "condition",
        [
            CONDITION | {"status": "Maybe"},
            CONDITION | {"reason": "has spaces"},
            CONDITION | {"type": "bad type!"},
            {k: v for k, v in CONDITION.items() if k != "lastTransitionTime"},
        ],
        ids=["status", "reason", "type", "missing-time"],
    )
    def test_bad_condition(self, api, kube_namespace, condition):
        _create(api, kube_namespace, JOBS, _body("GridweaveJob", "bad-cond", JOB_SPEC))
        patch = {"status": {"phase": "Pending", "conditions": [condition]}}
        code = _status_code(
            lambda: api.patch_namespaced_custom_object_status(
                GROUP, VERSION, kube_namespace, JOBS, "bad-cond", patch
            )
        )
        assert code == 422

    def test_bad_phase(self, api, kube_namespace):
        _create(api, kube_namespace, JOBS, _body("GridweaveJob", "bad-phase", JOB_SPEC))
        patch = {"status": {"phase": "Exploded"}}
        code = _status_code(
            lambda: api.patch_namespaced_custom_object_status(
                GROUP, VERSION, kube_namespace, JOBS, "bad-phase", patch
            )
        )
        assert code == 422


class TestOptimisticConcurrency:
    def test_stale_resource_version_is_409(self, api, kube_namespace):
        created = _create(api, kube_namespace, JOBS, _body("GridweaveJob", "stale", JOB_SPEC))
        stale = created["metadata"]["resourceVersion"]
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, kube_namespace, JOBS, "stale", {"status": {"phase": "Allocated"}}
        )
        patch = {"metadata": {"resourceVersion": stale}, "status": {"phase": "Running"}}
        code = _status_code(
            lambda: api.patch_namespaced_custom_object_status(
                GROUP, VERSION, kube_namespace, JOBS, "stale", patch
            )
        )
        assert code == 409


class TestPrinterColumns:
    @pytest.mark.parametrize(("plural", "kind", "spec", "status"), KINDS)
    def test_table_has_the_columns(self, api, kube_namespace, plural, kind, spec, status):
        _create(api, kube_namespace, plural, _body(kind, "table", spec))
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, kube_namespace, plural, "table", {"status": status}
        )
        api_client = api.api_client
        method, url, headers, body, _ = api_client.param_serialize(
            "GET",
            f"/apis/{GROUP}/{VERSION}/namespaces/{kube_namespace}/{plural}",
            header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
            auth_settings=["BearerToken"],
        )
        raw = api_client.call_api(method, url, header_params=headers, body=body)
        raw.read()
        response = json.loads(raw.data)
        assert response["kind"] == "Table"
        names = [column["name"] for column in response["columnDefinitions"]]
        for expected in ("Name", "Phase", "Node", "GPUs", "VRAM", "Age"):
            assert expected in names
        row = dict(zip(names, response["rows"][0]["cells"], strict=True))
        assert row["Phase"] == status["phase"]
        assert row["Node"] == status["node"]
        assert row["GPUs"] == spec["gpuCount"]
        assert row["VRAM"] == spec["vramMb"]


class TestManifestsOnDisk:
    @pytest.mark.parametrize("path", CRD_MANIFESTS, ids=lambda p: Path(p).name)
    def test_short_names_category_and_conditions_list_map(self, path):
        crd = yaml.safe_load(Path(path).read_text())
        names = crd["spec"]["names"]
        assert names["shortNames"] in (["gwj"], ["gwe"])
        assert names["categories"] == ["gridweave"]
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        conditions = schema["properties"]["status"]["properties"]["conditions"]
        assert conditions["x-kubernetes-list-type"] == "map"
        assert conditions["x-kubernetes-list-map-keys"] == ["type"]

    @pytest.mark.parametrize("path", CRD_MANIFESTS, ids=lambda p: Path(p).name)
    def test_every_field_of_the_schema_is_described(self, path):
        """So `kubectl explain gridweavejob.spec` (and every other field) says what it is.
        ``metadata`` is the apiserver's own (a CRD may not describe it)."""
        crd = yaml.safe_load(Path(path).read_text())
        undescribed = []

        def walk(node: dict[str, Any], where: str) -> None:
            if not node.get("description"):
                undescribed.append(where or "(root)")
            for name, field in node.get("properties", {}).items():
                if not (name == "metadata" and not where):
                    walk(field, f"{where}.{name}" if where else name)
            if "items" in node:
                walk(node["items"], f"{where}[]")

        for version in crd["spec"]["versions"]:
            walk(version["schema"]["openAPIV3Schema"], "")
        assert undescribed == []

    def test_rbac_is_namespaced_and_limited_to_gridweave(self):
        docs = list(yaml.safe_load_all((REPO_ROOT / "k8s" / "rbac.yaml").read_text()))
        kinds = sorted(doc["kind"] for doc in docs)
        assert kinds == ["Role", "RoleBinding", "RoleBinding", "ServiceAccount", "ServiceAccount"]
        role = next(doc for doc in docs if doc["kind"] == "Role")
        bound = {
            (subject["name"], doc["roleRef"]["name"])
            for doc in docs
            if doc["kind"] == "RoleBinding"
            for subject in doc["subjects"]
        }
        assert bound == {
            ("kuberay-service", "gridweave-crd-editor"),
            ("job-gateway", "gridweave-crd-editor"),
        }
        assert role["metadata"]["namespace"] == "gridweave"
        resources = {r for rule in role["rules"] for r in rule["resources"]}
        assert resources == {
            "gridweavejobs",
            "gridweaveendpoints",
            "gridweavejobs/status",
            "gridweaveendpoints/status",
        }
        assert {g for rule in role["rules"] for g in rule["apiGroups"]} == {"gridweave.io"}
