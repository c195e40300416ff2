"""What every Gridweave service shares: settings, auth, database, errors, metrics, app factory.

See ``docs/architecture.md`` ("Service runtime") for how a service is built on it.
"""

from __future__ import annotations

from gridweave_runtime.app import ConfigurationError, create_service_app, open_service_database
from gridweave_runtime.auth import (
    ROLE_HEADER,
    TOKEN_HEADER,
    USER_HEADER,
    Caller,
    Forbidden,
    Unauthorized,
    install_internal_auth,
    require_internal_caller,
    require_role,
)
from gridweave_runtime.clients import install_client, state_dependency
from gridweave_runtime.database import (
    Database,
    create_database,
    session_dependency,
    upgrade_database,
)
from gridweave_runtime.errors import (
    GridweaveError,
    InvalidRequest,
    error_body,
    install_error_handlers,
)
from gridweave_runtime.metrics import ServiceMetrics, install_health_and_metrics
from gridweave_runtime.postgres import (
    EmbeddedPostgresError,
    embedded_server_url,
    ensure_database,
    resolve_database_url,
    to_sqlalchemy_url,
)
from gridweave_runtime.responses import REPLAYED_HEADER, json_answer, mark_replayed
from gridweave_runtime.settings import CreditCallerSettings, ServiceSettings, default_state_dir

__all__ = [
    "REPLAYED_HEADER",
    "ROLE_HEADER",
    "TOKEN_HEADER",
    "USER_HEADER",
    "Caller",
    "ConfigurationError",
    "CreditCallerSettings",
    "Database",
    "EmbeddedPostgresError",
    "Forbidden",
    "GridweaveError",
    "InvalidRequest",
    "ServiceMetrics",
    "ServiceSettings",
    "Unauthorized",
    "create_database",
    "create_service_app",
    "default_state_dir",
    "embedded_server_url",
    "ensure_database",
    "error_body",
    "install_error_handlers",
    "install_client",
    "install_health_and_metrics",
    "install_internal_auth",
    "json_answer",
    "mark_replayed",
    "open_service_database",
    "require_internal_caller",
    "require_role",
    "resolve_database_url",
    "session_dependency",
    "state_dependency",
    "to_sqlalchemy_url",
    "upgrade_database",
]
