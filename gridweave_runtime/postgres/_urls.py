"""Database URLs: libpq's ``postgresql://`` and SQLAlchemy's ``postgresql+psycopg://``."""

from __future__ import annotations

from sqlalchemy.engine import make_url

__all__ = ["libpq_conninfo", "to_sqlalchemy_url", "with_login"]


def to_sqlalchemy_url(libpq_url: str, database: str | None = None) -> str:
    """Turn a ``postgresql://`` URL into a ``postgresql+psycopg://`` one, maybe renaming the db."""
    url = make_url(libpq_url).set(drivername="postgresql+psycopg")
    if database is not None:
        url = url.set(database=database)
    return url.render_as_string(hide_password=False)


def libpq_conninfo(url: str, database: str | None = None) -> str:
    """The libpq URL (what psycopg connects with) of a libpq or SQLAlchemy ``url``."""
    parsed = make_url(url).set(drivername="postgresql")
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


def with_login(url: str, *, user: str, password: str, database: str) -> str:
    """The SQLAlchemy URL of ``database`` on ``url``'s server, as ``user`` with ``password``."""
    parsed = make_url(url).set(
        drivername="postgresql+psycopg", username=user, password=password, database=database
    )
    return parsed.render_as_string(hide_password=False)
