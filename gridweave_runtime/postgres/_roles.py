"""A role of its own for each service's database, made by the superuser.

Each service database ``<name>`` is owned by the login role ``gw_<name>``: no superuser, no
CREATEDB, no CREATEROLE, no replication, no row-security bypass; it migrates its own schema
as the owner. ``CONNECT`` is revoked from PUBLIC on every service database and on the
maintenance databases (``postgres``, ``template1``, the superuser's own), so one service's
role opens no other database. What the superuser owned inside a service database (older
versions ran the migrations as the superuser) is handed to the role.

``docker/deploy/postgres-roles.sql`` does the same on the compose PostgreSQL; its
hand-over block is :data:`HAND_OVER_OBJECTS`, kept the same by a test.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from gridweave_runtime.postgres._auth import scram
from gridweave_runtime.postgres._urls import libpq_conninfo, with_login

__all__ = [
    "DATABASE_NAME_PATTERN",
    "HAND_OVER_OBJECTS",
    "ROLE_PREFIX",
    "check_database_name",
    "provision_service_database",
    "service_role_name",
]

DATABASE_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
ROLE_PREFIX = "gw_"
_MAX_IDENTIFIER = 63  # PostgreSQL's NAMEDATALEN - 1
_MAINTENANCE_DATABASES = ("postgres", "template1")
_ROLE_RIGHTS = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT"

#: Hands every object of the current database that the connected superuser owns (outside
#: the system schemas, and not an extension's) to the database's owner. ``REASSIGN OWNED``
#: cannot: the bootstrap superuser also owns the system's objects. A column's sequence
#: moves with its table; indexes, triggers and row types follow theirs.
HAND_OVER_OBJECTS = r"""
DO $hand_over$
DECLARE
    superuser oid := (SELECT oid FROM pg_roles WHERE rolname = current_user);
    new_owner name := (
        SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()
    );
    statement text;
BEGIN
    IF new_owner = current_user THEN
        RETURN;
    END IF;
    FOR statement IN
        SELECT format('ALTER SCHEMA %I OWNER TO %I', n.nspname, new_owner)
        FROM pg_namespace n
        WHERE n.nspowner = superuser
          AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_namespace'::regclass
                          AND d.objid = n.oid AND d.deptype = 'e')
    LOOP
        EXECUTE statement;
    END LOOP;
    FOR statement IN
        SELECT format('ALTER %s %s OWNER TO %I',
                      CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                     WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'S' THEN 'SEQUENCE'
                                     ELSE 'TABLE' END,
                      c.oid::regclass, new_owner)
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relowner = superuser AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
          AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                          AND d.objid = c.oid
                          AND (d.deptype = 'e' OR (c.relkind = 'S' AND d.deptype IN ('a', 'i'))))
    LOOP
        EXECUTE statement;
    END LOOP;
    FOR statement IN
        SELECT format('ALTER %s %s OWNER TO %I',
                      CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END,
                      t.oid::regtype, new_owner)
        FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        LEFT JOIN pg_class c ON c.oid = t.typrelid
        WHERE t.typowner = superuser
          AND (t.typtype IN ('e', 'd', 'r') OR (t.typtype = 'c' AND c.relkind = 'c'))
          AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_type'::regclass
                          AND d.objid = t.oid AND d.deptype = 'e')
    LOOP
        EXECUTE statement;
    END LOOP;
    FOR statement IN
        SELECT format('ALTER %s %s OWNER TO %I',
                      CASE p.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE'
                                     ELSE 'FUNCTION' END,
                      p.oid::regprocedure, new_owner)
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE p.proowner = superuser
          AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                          AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE statement;
    END LOOP;
END
$hand_over$;
"""


def check_database_name(name: str | None) -> str:
    """``name`` if it is a service database's name; else ``ValueError`` naming the rule."""
    if name is None or not DATABASE_NAME_PATTERN.fullmatch(name):
        raise ValueError(f"database name must match {DATABASE_NAME_PATTERN.pattern}: {name!r}")
    return name


def service_role_name(database: str) -> str:
    """``gw_<database>``: the login role that owns a service's database."""
    role = ROLE_PREFIX + check_database_name(database)
    if len(role) > _MAX_IDENTIFIER:
        raise ValueError(
            f"database name {database!r} is too long for its role {role!r} "
            f"(at most {_MAX_IDENTIFIER - len(ROLE_PREFIX)} characters)"
        )
    return role


def provision_service_database(admin_url: str, database: str, password: str) -> str:
    """Make ``database`` and its role ``gw_<database>`` on the server ``admin_url`` reaches
    as a superuser; return the SQLAlchemy URL that logs in as that role with ``password``.

    Idempotent: run again, it sets the role's rights and password again and hands over
    whatever the superuser owns in the database (a database an older version made).
    """
    role = service_role_name(database)
    maintenance = make_url(admin_url).database or "postgres"
    with psycopg.connect(libpq_conninfo(admin_url), autocommit=True) as conn:
        _ensure_role(conn, role, password)
        _ensure_owned_database(conn, database, role)
        for name in dict.fromkeys((database, maintenance, *_MAINTENANCE_DATABASES)):
            conn.execute(
                sql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(
                    sql.Identifier(name)
                )
            )
    with psycopg.connect(libpq_conninfo(admin_url, database), autocommit=True) as conn:
        conn.execute(HAND_OVER_OBJECTS)
    return with_login(admin_url, user=role, password=password, database=database)


def _ensure_role(conn: psycopg.Connection[Any], role: str, password: str) -> None:
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    if exists is None:
        try:
            conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
        except psycopg.errors.DuplicateObject:
            pass  # made concurrently (another server's provisioning): altered below
    conn.execute(
        sql.SQL("ALTER ROLE {} WITH " + _ROLE_RIGHTS + " PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(scram(conn, role, password))
        )
    )


def _ensure_owned_database(conn: psycopg.Connection[Any], database: str, role: str) -> None:
    name, owner = sql.Identifier(database), sql.Identifier(role)
    exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
    if exists is None:
        try:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(name, owner))
            return
        except psycopg.errors.DuplicateDatabase:
            pass  # made concurrently: its owner is set below
    conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(name, owner))
