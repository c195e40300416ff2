"""``GRIDWEAVE_KUBECONFIG``: the all-in-one on an existing cluster (here the tests' API)
installs what it needs and gives kuberay-service and the gateway their ServiceAccounts'
rights, no more."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gridweave_allinone.kube import (
    GATEWAY_SERVICE_ACCOUNT,
    KUBERAY_SERVICE_ACCOUNT,
    NAMESPACE,
    KubeAccess,
    start_kube,
)
from gridweave_allinone.settings import AllInOneSettings
from gridweave_controller.store import GROUP, JOBS, VERSION
from gridweave_runtime.kubeapi import KubeAPIServer, api_client_for
from tests.support.kubeapi import KubeAPI, kubectl_path

pytestmark = pytest.mark.kubeapi


def test_the_local_apis_kubectl_is_the_one_built_beside_it(tmp_path: Path) -> None:
    binaries = kubectl_path().parent
    server = KubeAPIServer(tmp_path, binaries=binaries)
    access = KubeAccess(
        tmp_path / "admin.kubeconfig",
        tmp_path / "kuberay.kubeconfig",
        tmp_path / "gateway.kubeconfig",
        server,
    )
    assert access.kubectl == binaries / "kubectl"


def test_an_existing_cluster_gets_the_resources_and_each_services_identity(
    kubeapi: KubeAPI, tmp_path: Path
) -> None:
    settings = AllInOneSettings(state_dir=tmp_path, kubeconfig=kubeapi.kubeconfig)
    access = start_kube(settings, show_progress=False)
    assert access.server is None and access.admin_kubeconfig == kubeapi.kubeconfig
    for kubeconfig, account in (
        (access.service_kubeconfig, KUBERAY_SERVICE_ACCOUNT),
        (access.gateway_kubeconfig, GATEWAY_SERVICE_ACCOUNT),
    ):
        assert kubeconfig.stat().st_mode & 0o077 == 0  # a credential: 0600
        with api_client_for(kubeconfig) as api_client:
            jobs = client.CustomObjectsApi(api_client).list_namespaced_custom_object(
                GROUP, VERSION, NAMESPACE, JOBS
            )
            assert isinstance(jobs, dict) and jobs["kind"] == "GridweaveJobList"
            with pytest.raises(ApiException) as refused:
                client.CoreV1Api(api_client).list_namespace()
            assert refused.value.status == 403
            review = client.AuthenticationV1Api(api_client).create_self_subject_review(
                client.V1SelfSubjectReview()
            )
            assert review.status is not None and review.status.user_info is not None
            user = review.status.user_info.username
            assert user == f"system:serviceaccount:{NAMESPACE}:{account}"
    on_path = shutil.which("kubectl")  # an existing cluster: the PATH's kubectl, if any
    assert access.kubectl == (None if on_path is None else Path(on_path))
    access.stop()  # an existing cluster is left running
    with api_client_for(kubeapi.kubeconfig) as admin:
        metadata = client.CoreV1Api(admin).read_namespace(NAMESPACE).metadata
        assert metadata is not None and metadata.name == NAMESPACE
