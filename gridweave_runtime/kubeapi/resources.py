"""What goes on a fresh API: the Gridweave namespace, the CRDs (Established), the RBAC
manifests (server-side apply), and kubeconfigs of ServiceAccounts (TokenRequest)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from gridweave_runtime.kubeapi.errors import KubeAPIError
from gridweave_runtime.kubeapi.kubeconfig import kubeconfig_for_token

__all__ = [
    "api_client_for",
    "apply_manifests",
    "ensure_namespace",
    "install_crds",
    "service_account_kubeconfig",
]

_POLL_S = 0.05


@contextmanager
def api_client_for(kubeconfig: Path) -> Iterator[client.ApiClient]:
    """An official-client ``ApiClient`` for the cluster a kubeconfig names, closed on exit."""
    api_client: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig)
    )
    try:
        yield api_client
    finally:
        api_client.close()  # type: ignore[no-untyped-call]


def ensure_namespace(api_client: client.ApiClient, name: str) -> None:
    """Create the Namespace ``name`` unless it exists."""
    core = client.CoreV1Api(api_client)
    try:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    except ApiException as exc:
        if exc.status != 409:
            raise


def _apply_crd(ext: client.ApiextensionsV1Api, body: dict[str, Any]) -> None:
    """Create the CRD, or replace the one there with this manifest."""
    name = body["metadata"]["name"]
    # Sent as the manifest's own dict (the client serializes dicts as they are), so no field
    # is lost to the client's model of a CRD.
    manifest = cast(client.V1CustomResourceDefinition, body)
    try:
        ext.create_custom_resource_definition(manifest)
        return
    except ApiException as exc:
        if exc.status != 409:
            raise
    current = ext.read_custom_resource_definition(name)
    body["metadata"]["resourceVersion"] = current.metadata and current.metadata.resource_version
    ext.replace_custom_resource_definition(name, manifest)


def _established(ext: client.ApiextensionsV1Api, name: str) -> bool:
    crd = ext.read_custom_resource_definition(name)
    conditions = (crd.status and crd.status.conditions) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


def _openapi_has(api_client: client.ApiClient, groups: set[str]) -> bool:
    """Whether ``/openapi/v3`` already lists a path for each ``group/version``."""
    method, url, headers, _, _ = api_client.param_serialize(
        "GET", "/openapi/v3", auth_settings=["BearerToken"]
    )
    response = api_client.call_api(method, url, header_params=headers)
    response.read()  # type: ignore[no-untyped-call]
    if response.status != 200:
        return False
    paths = json.loads(response.data or b"{}").get("paths", {})
    return all(f"apis/{group}" in paths for group in groups)


def install_crds(
    api_client: client.ApiClient, manifests: Sequence[Path], *, timeout_s: float = 60.0
) -> list[str]:
    """Create or replace each CRD, then wait until all are Established and in the OpenAPI.

    Returns the CRD names. Waiting for the OpenAPI document too means ``kubectl explain``
    and kubectl's schema validation work as soon as this returns.
    """
    ext = client.ApiextensionsV1Api(api_client)
    names: list[str] = []
    group_versions: set[str] = set()
    for path in manifests:
        body = yaml.safe_load(path.read_text())
        _apply_crd(ext, body)
        names.append(body["metadata"]["name"])
        spec = body["spec"]
        group_versions |= {f"{spec['group']}/{v['name']}" for v in spec["versions"] if v["served"]}
    deadline = time.monotonic() + timeout_s
    pending = list(names)
    while pending:
        pending = [name for name in pending if not _established(ext, name)]
        if pending and time.monotonic() > deadline:
            raise KubeAPIError(f"CRDs not Established after {timeout_s}s: {', '.join(pending)}")
        if pending:
            time.sleep(_POLL_S)
    while not _openapi_has(api_client, group_versions):
        if time.monotonic() > deadline:
            raise KubeAPIError(f"the OpenAPI document lacks {sorted(group_versions)}")
        time.sleep(_POLL_S)
    return names


def apply_manifests(
    api_client: client.ApiClient, manifests: Sequence[Path], *, field_manager: str = "gridweave"
) -> int:
    """Server-side apply every object of the (multi-document) YAML manifests; how many.

    The way ``kubectl apply --server-side`` does it: applying again changes nothing, and a
    manifest edited since wins over the fields it owns.
    """
    dynamic = DynamicClient(api_client)  # type: ignore[no-untyped-call]
    applied = 0
    for path in manifests:
        for body in yaml.safe_load_all(path.read_text()):
            if not body:
                continue
            resource = dynamic.resources.get(api_version=body["apiVersion"], kind=body["kind"])
            resource.server_side_apply(
                body=body,
                namespace=body["metadata"].get("namespace"),
                field_manager=field_manager,
                force_conflicts=True,
            )
            applied += 1
    return applied


def service_account_kubeconfig(
    api_client: client.ApiClient,
    *,
    namespace: str,
    service_account: str,
    expiration_seconds: int,
) -> dict[str, Any]:
    """A kubeconfig (as a dict) acting as the ServiceAccount, with a TokenRequest token.

    The server and the CA are those ``api_client`` was configured with.
    """
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=expiration_seconds)
    )
    answer = client.CoreV1Api(api_client).create_namespaced_service_account_token(
        service_account, namespace, request
    )
    token = answer.status and answer.status.token
    if not token:
        raise KubeAPIError(f"no token issued for ServiceAccount {namespace}/{service_account}")
    configuration = api_client.configuration
    if not configuration.ssl_ca_cert:
        raise KubeAPIError("the admin kubeconfig names no CA file")
    ca = Path(configuration.ssl_ca_cert).read_bytes()
    return kubeconfig_for_token(configuration.host, ca, token, service_account)
