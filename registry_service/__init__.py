"""The image registry (port 30500): ``distribution`` v3 run and looked after by Gridweave.

``python -m registry_service`` runs the registry binary (``tools/registry``) with its
configuration written from :class:`RegistrySettings`: filesystem storage under the state
directory, deletes enabled, token auth from the platform (tokens verified with the
platform's JWK Set), push notifications to the platform. Beside it, a small HTTP server
(port 30501) answers ``/healthz`` and ``/metrics`` and ``POST /v1/collections``. Every
``REGISTRY_GC_INTERVAL_HOURS`` the registry is restarted read-only, ``registry
garbage-collect --delete-untagged`` runs, and it is restarted read-write; every
``REGISTRY_RECONCILE_SECONDS`` the usage of each namespace is read from storage and sent to
the platform, which counts quotas.
"""

from __future__ import annotations

from registry_service.settings import RegistrySettings
from registry_service.supervisor import CollectionResult, RegistrySupervisor

__all__ = ["CollectionResult", "RegistrySettings", "RegistrySupervisor"]
