"""What every Gridweave service shares: settings, auth, database, errors, metrics, app factory.

See ``docs/architecture.md`` ("Service runtime") for how a service is built on it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
        embedded_database_url,
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
    "embedded_database_url",
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

#: Where each name lives: imported on first use, so a process that needs one module (a Ray
#: worker reading the object store) does not import the web framework and the database.
_EXPORTS = {
    "Caller": "gridweave_runtime.auth",
    "ConfigurationError": "gridweave_runtime.app",
    "CreditCallerSettings": "gridweave_runtime.settings",
    "Database": "gridweave_runtime.database",
    "EmbeddedPostgresError": "gridweave_runtime.postgres",
    "Forbidden": "gridweave_runtime.auth",
    "GridweaveError": "gridweave_runtime.errors",
    "InvalidRequest": "gridweave_runtime.errors",
    "REPLAYED_HEADER": "gridweave_runtime.responses",
    "ROLE_HEADER": "gridweave_runtime.auth",
    "ServiceMetrics": "gridweave_runtime.metrics",
    "ServiceSettings": "gridweave_runtime.settings",
    "TOKEN_HEADER": "gridweave_runtime.auth",
    "USER_HEADER": "gridweave_runtime.auth",
    "Unauthorized": "gridweave_runtime.auth",
    "create_database": "gridweave_runtime.database",
    "create_service_app": "gridweave_runtime.app",
    "default_state_dir": "gridweave_runtime.settings",
    "embedded_database_url": "gridweave_runtime.postgres",
    "embedded_server_url": "gridweave_runtime.postgres",
    "ensure_database": "gridweave_runtime.postgres",
    "error_body": "gridweave_runtime.errors",
    "install_client": "gridweave_runtime.clients",
    "install_error_handlers": "gridweave_runtime.errors",
    "install_health_and_metrics": "gridweave_runtime.metrics",
    "install_internal_auth": "gridweave_runtime.auth",
    "json_answer": "gridweave_runtime.responses",
    "mark_replayed": "gridweave_runtime.responses",
    "open_service_database": "gridweave_runtime.app",
    "require_internal_caller": "gridweave_runtime.auth",
    "require_role": "gridweave_runtime.auth",
    "resolve_database_url": "gridweave_runtime.postgres",
    "session_dependency": "gridweave_runtime.database",
    "state_dependency": "gridweave_runtime.clients",
    "to_sqlalchemy_url": "gridweave_runtime.postgres",
    "upgrade_database": "gridweave_runtime.database",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
