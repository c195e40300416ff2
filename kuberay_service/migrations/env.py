"""Alembic environment of the kuberay (node registry) database."""

from __future__ import annotations

from gridweave_runtime.migrations_env import run_migrations
from kuberay_service.models import KubeRayBase

run_migrations(KubeRayBase.metadata)
