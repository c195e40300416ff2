"""k8s/rbac.yaml is enough for everything the services do, and nothing beyond it is allowed.

The test acts as the ServiceAccount itself: a token from the TokenRequest API, sent as a
bearer token, through the same ``gridweave_controller`` calls the services make.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from gridweave_controller import CrdClient, EndpointPhase, JobPhase, TransportError
from gridweave_controller._kube_store import KubeStore
from gridweave_controller.store import GROUP, JOBS, VERSION
from gridweave_runtime.kubeapi import api_client_for, kubeconfig_for_token, write_kubeconfig
from tests.support.kubeapi import NAMESPACE, REPO_ROOT, KubeAPI, KubeAPIUnavailable, kubectl_path
from tests.support.unavailable import fail_or_skip

pytestmark = pytest.mark.kubeapi

RBAC_MANIFEST = REPO_ROOT / "k8s" / "rbac.yaml"
#: The ServiceAccounts the manifest binds to the same Role: kuberay-service, and the gateway
#: that reaches the CRDs directly (the all-in-one's).
SERVICE_ACCOUNTS = ("kuberay-service", "job-gateway")


def _kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        binary = kubectl_path()
    except KubeAPIUnavailable as exc:
        fail_or_skip("kubectl", exc)
    return subprocess.run(
        [str(binary), f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _server_and_ca(kubeconfig: Path) -> tuple[str, bytes]:
    """The API's URL and the CA to trust, as the admin kubeconfig names them."""
    configuration = client.Configuration()
    k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig), client_configuration=configuration
    )
    assert configuration.ssl_ca_cert is not None, "the admin kubeconfig names no CA"
    return configuration.host, Path(configuration.ssl_ca_cert).read_bytes()


@pytest.fixture(scope="module")
def applied(kubeapi: KubeAPI) -> str:
    """``kubectl apply -f k8s/rbac.yaml`` as the admin; its output."""
    result = _kubectl(kubeapi.kubeconfig, "apply", "-f", str(RBAC_MANIFEST))
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module", params=SERVICE_ACCOUNTS)
def service_account(request: pytest.FixtureRequest) -> str:
    """Each ServiceAccount of the manifest in turn."""
    return str(request.param)


@pytest.fixture(scope="module")
def sa_kubeconfig(
    applied: str,
    service_account: str,
    kubeapi: KubeAPI,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """A kubeconfig holding a fresh TokenRequest token of the ServiceAccount."""
    with api_client_for(kubeapi.kubeconfig) as admin:
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        )
        answer = client.CoreV1Api(admin).create_namespaced_service_account_token(
            service_account, NAMESPACE, request
        )
    assert answer.status is not None and answer.status.token
    server, ca = _server_and_ca(kubeapi.kubeconfig)
    config = kubeconfig_for_token(server, ca, answer.status.token, service_account)
    return write_kubeconfig(tmp_path_factory.mktemp("sa") / "kubeconfig", config)


@pytest.fixture
def sa_client(sa_kubeconfig: Path) -> Iterator[client.ApiClient]:
    """An ApiClient that authenticates as the ServiceAccount only."""
    with api_client_for(sa_kubeconfig) as api_client:
        yield api_client


@pytest.fixture
def typed(sa_client: client.ApiClient) -> CrdClient:
    """The services' typed client, as the ServiceAccount, in the gridweave namespace."""
    return CrdClient(KubeStore(sa_client), NAMESPACE)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_the_manifest_applies(applied: str) -> None:
    assert "role.rbac.authorization.k8s.io/gridweave-crd-editor" in applied
    for account in SERVICE_ACCOUNTS:
        assert f"serviceaccount/{account}" in applied
        assert f"rolebinding.rbac.authorization.k8s.io/{account}-crd-editor" in applied


def test_the_token_authenticates_as_the_service_account(
    sa_kubeconfig: Path, service_account: str
) -> None:
    result = _kubectl(sa_kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo}")
    assert result.returncode == 0, result.stderr
    assert f'"username":"system:serviceaccount:{NAMESPACE}:{service_account}"' in result.stdout


class TestWhatTheServicesDo:
    def test_every_job_operation(self, typed: CrdClient) -> None:
        done, failed, requeued = _name("done"), _name("failed"), _name("requeued")
        cancelled, late = _name("cancelled"), _name("late")
        for job_id in (done, failed, requeued, cancelled, late):
            assert typed.create_job(job_id, "rbac-user", "s3://f", vram_mb=1).phase is (
                JobPhase.PENDING
            )
        assert typed.get_job(done).metadata.name == done
        assert {j.metadata.name for j in typed.list_jobs(user_id="rbac-user")} >= {done, failed}
        typed.set_job_allocated(done, "gpu-1", [0])
        typed.set_job_running(done)
        assert typed.set_job_completed(done, wall_seconds=1.5).phase is JobPhase.COMPLETED
        assert typed.set_job_failed(failed, "NodeLost", "gone").phase is JobPhase.FAILED
        typed.set_job_allocated(requeued, "gpu-1", [0])
        assert typed.set_job_pending(requeued, "NodeLost").status.attempts == 1
        assert typed.set_job_cancelled(cancelled).phase is JobPhase.CANCELLED
        typed.set_job_allocated(late, "gpu-1", [0])
        typed.set_job_running(late)
        assert typed.set_job_timed_out(late).phase is JobPhase.TIMED_OUT
        for job_id in (done, failed, requeued, cancelled, late):
            typed.delete_job(job_id)
        assert not {j.metadata.name for j in typed.list_jobs(user_id="rbac-user")} & {done}

    def test_every_endpoint_operation(self, typed: CrdClient) -> None:
        served, broken = _name("served"), _name("broken")
        for endpoint_id in (served, broken):
            typed.create_endpoint(endpoint_id, "rbac-user", vram_mb=1, model="m")
        assert typed.get_endpoint(served).phase is EndpointPhase.PENDING
        assert {e.metadata.name for e in typed.list_endpoints(user_id="rbac-user")} >= {served}
        typed.set_endpoint_deploying(served, "gpu-1", [0])
        typed.set_endpoint_running(served, "http://gpu-1:8000")
        typed.set_endpoint_health(served, True, ready_replicas=1)
        assert typed.set_endpoint_stopped(served, "UserStopped").phase is EndpointPhase.STOPPED
        assert typed.set_endpoint_failed(broken, "ImagePullFailed").phase is EndpointPhase.FAILED
        for endpoint_id in (served, broken):
            typed.delete_endpoint(endpoint_id)

    def test_list_and_watch(self, typed: CrdClient, sa_client: client.ApiClient) -> None:
        job_id = _name("watched")
        typed.create_job(job_id, "rbac-user", "s3://f", vram_mb=1)
        api = client.CustomObjectsApi(sa_client)
        listed: Any = api.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, JOBS)
        version = listed["metadata"]["resourceVersion"]
        typed.set_job_cancelled(job_id)
        watcher = watch.Watch()  # type: ignore[no-untyped-call]
        stream = watcher.stream(  # type: ignore[no-untyped-call]
            api.list_namespaced_custom_object,
            GROUP,
            VERSION,
            NAMESPACE,
            JOBS,
            resource_version=version,
            timeout_seconds=30,
        )
        events = []
        for event in stream:
            events.append((event["type"], event["object"]["metadata"]["name"]))
            if events[-1] == ("MODIFIED", job_id):
                watcher.stop()  # type: ignore[no-untyped-call]
        assert ("MODIFIED", job_id) in events
        typed.delete_job(job_id)


def _forbidden(call: Callable[[], Any]) -> dict[str, Any]:
    """Run ``call``; it must be refused with 403 Forbidden. Return the Status."""
    with pytest.raises((TransportError, ApiException)) as caught:
        call()
    error = caught.value
    if isinstance(error, TransportError):
        status = error.status
    else:
        assert isinstance(error, ApiException) and error.status == 403
        status = json.loads(error.body or "{}")
    assert (status["code"], status["reason"]) == (403, "Forbidden"), status
    return status


class TestWhatIsRefused:
    def test_another_namespace(self, sa_client: client.ApiClient, kube_namespace: str) -> None:
        elsewhere = CrdClient(KubeStore(sa_client), kube_namespace)
        status = _forbidden(elsewhere.list_jobs)
        assert f'in the namespace "{kube_namespace}"' in status["message"]
        _forbidden(lambda: elsewhere.create_job(_name("x"), "u", "s3://f", vram_mb=1))
        _forbidden(lambda: elsewhere.get_endpoint("any"))

    def test_every_namespace_at_once(self, sa_client: client.ApiClient) -> None:
        api = client.CustomObjectsApi(sa_client)
        _forbidden(lambda: api.list_cluster_custom_object(GROUP, VERSION, JOBS))

    def test_other_resources(self, sa_client: client.ApiClient) -> None:
        core = client.CoreV1Api(sa_client)
        _forbidden(lambda: core.list_namespaced_pod(NAMESPACE))
        _forbidden(lambda: core.list_namespaced_secret(NAMESPACE))
        _forbidden(lambda: core.list_namespace())

    def test_the_crd_itself(self, sa_client: client.ApiClient) -> None:
        ext = client.ApiextensionsV1Api(sa_client)
        _forbidden(lambda: ext.delete_custom_resource_definition(f"{JOBS}.{GROUP}"))
        _forbidden(lambda: ext.list_custom_resource_definition())

    def test_can_i_lists_exactly_the_role(self, sa_kubeconfig: Path) -> None:
        result = _kubectl(sa_kubeconfig, "auth", "can-i", "--list", f"--namespace={NAMESPACE}")
        assert result.returncode == 0, result.stderr
        rows = {
            line.split()[0]: line[line.rindex("[") :].strip()
            for line in result.stdout.splitlines()
            if line.startswith("gridweave")
        }
        every = "[get list watch create update patch delete]"
        assert rows == {
            f"{JOBS}.{GROUP}": every,
            f"gridweaveendpoints.{GROUP}": every,
            f"{JOBS}.{GROUP}/status": "[get update patch]",
            f"gridweaveendpoints.{GROUP}/status": "[get update patch]",
        }
