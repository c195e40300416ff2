"""The official Kubernetes client's connection, found the way every Gridweave part finds it."""

from __future__ import annotations

import os

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from gridweave_controller._kubeconfig import kubeconfig_file
from gridweave_controller.errors import TransportError

__all__ = ["load_api_client"]


def load_api_client(kubeconfig: str | os.PathLike[str] | None) -> k8s_client.ApiClient:
    """The official client's ApiClient: in-cluster when ``kubeconfig`` is unset and the
    process runs in a pod, else ``kubeconfig`` (or ``KUBECONFIG``, or ~/.kube/config).

    No configuration found: :class:`TransportError`.
    """
    if kubeconfig is None:
        try:
            configuration = k8s_client.Configuration()
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
            return k8s_client.ApiClient(configuration)
        except k8s_config.ConfigException:
            pass
    try:
        loaded: k8s_client.ApiClient = k8s_config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig_file(kubeconfig)
        )
    except (k8s_config.ConfigException, OSError) as exc:
        raise TransportError(f"no Kubernetes configuration found: {exc}") from exc
    return loaded
